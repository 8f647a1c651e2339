// Fuzz targets (issue #14): each takes arbitrary bytes, runs one untrusted-input path of fencelock
// and traps (__builtin_trap) if an invariant breaks; sanitizers catch the rest. The same functions
// run under libFuzzer (scripts/fuzz.sh, clang) and, over the kept corpus, in the test suite (g++).
//
//   http_request   bytes → Beast's request parser with fencelockd's limits → ApiHandlers::dispatch
//                  (router, body validation, handlers) on an in-memory engine: exactly one answer,
//                  a known status, a JSON body.
//   http_session   bytes → a byte stream sent over loopback TCP into the real HttpSession (the
//                  same read path, buffers and limits as fencelockd) on an in-memory engine: the
//                  first two bytes repeat the input's last 64 bytes up to 262,140 times (streams
//                  of up to 16 MiB from a small input); every answer is well framed with a known
//                  status, and the session stops reading a stream once it passes its limits.
//   request_body   bytes → the acquire, extend and release body validators.
//   flat_json      bytes → FlatJsonObject::parse, differential: whatever it accepts, nlohmann's
//                  parse reads as the same object (keys, kinds, values); what it declines is
//                  nlohmann's to decide.
//   lease          bytes → decode_lease; whatever decodes re-encodes to the same string.
//   resp           bytes → hiredis's RESP reader → NodeReply::from_hiredis (the engine's copy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fencelock::fuzz {

void http_request(const std::uint8_t* data, std::size_t size);
void http_session(const std::uint8_t* data, std::size_t size);
void request_body(const std::uint8_t* data, std::size_t size);
void flat_json(const std::uint8_t* data, std::size_t size);
void lease(const std::uint8_t* data, std::size_t size);
void resp(const std::uint8_t* data, std::size_t size);

// The target named `name` ("http_request", ...), or nullptr.
using Target = void (*)(const std::uint8_t*, std::size_t);
Target target_named(std::string_view name);

}  // namespace fencelock::fuzz
