// The JSON bodies of the hot answers (a lease granted or extended, a release), written by hand
// into one string: nlohmann's DOM cost a map node and a string per field, and its dump() walked
// them again. Each writes byte for byte what nlohmann::json's dump() wrote for the same object
// before: the keys in its (sorted) order, no spaces, integers in decimal, strings escaped as
// dump() escapes them (append_json_string()). Pure; thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api/api_handlers.h"

namespace fencelock::service {

// {"lease":…,"name":…,"token":…,"ttl_ms":…,"validity_ms":…[,"waited_ms":…]}: the answer to a
// granted acquire (with `waited`) or an extend (without). The lease is a secret: the body goes to
// the client only, never to a log.
std::string lease_answer_json(std::string_view name, std::string_view lease, std::uint64_t token,
                              std::chrono::milliseconds ttl, std::chrono::milliseconds validity,
                              std::optional<std::chrono::milliseconds> waited = std::nullopt);

// {"name":…,"released":true|false}: the answer to a release.
std::string released_answer_json(std::string_view name, bool released);

// `text` as a JSON string, quotes included, as nlohmann's dump() writes it: '"' and '\\' escaped,
// \b \f \n \r \t, other bytes below 0x20 as \u00xx, the rest as is. Text with a byte of 0x80 or
// more is handed to nlohmann itself, which checks the UTF-8 (and throws
// nlohmann::json::type_error on bytes that are not, as dump() did).
void append_json_string(std::string& out, std::string_view text);

// A 200 whose body is JSON text already written; `token` goes to the request log.
ApiResponse ok_json_text(std::string body, std::optional<std::uint64_t> token = std::nullopt);

}  // namespace fencelock::service
