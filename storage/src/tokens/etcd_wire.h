// What the etcd token source sends to etcd's JSON gateway (v3 API over HTTP/1.1) and how it reads
// the answers: pure functions, no I/O. Keys and values travel base64-encoded; int64 fields come
// back as JSON strings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fencelock/storage/result.h"

namespace fencelock::storage::etcd {

// What every answer's header says.
struct Header {
  std::string cluster_id;  // decimal, as etcd writes it
  std::uint64_t revision = 0;
};

std::string base64(std::string_view bytes);

// POST /v3/kv/txn: one put per key, no comparison — one revision for all of them.
std::string txn_put_body(const std::vector<std::string>& keys);
// POST /v3/kv/range of one key.
std::string range_body(std::string_view key);
// POST /v3/maintenance/status
inline constexpr std::string_view kStatusBody = "{}";

// An answer's header. Errors: kUnavailable with etcd's own message when the answer is an error
// (a non-200 status, or a body with "error"), kInternal when the body is not what the gateway
// sends.
Result<Header> read_header(unsigned status, std::string_view body);
// A range answer's mod_revision of the key, 0 when the key does not exist. Errors as above.
Result<std::uint64_t> read_mod_revision(std::string_view body);

}  // namespace fencelock::storage::etcd
