// What the etcd token source sends to etcd's JSON gateway (v3 API over HTTP/1.1) and how it reads
// the answers: pure functions, no I/O. Keys and values travel base64-encoded; int64 fields come
// back as JSON strings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fencelock/storage/result.h"

namespace fencelock::storage::etcd {

// What every answer's header says, and whether a transaction's comparisons held.
struct Header {
  std::string cluster_id;  // decimal, as etcd writes it
  std::uint64_t revision = 0;
  bool succeeded = false;  // a transaction's; etcd leaves it out when false
};

// The key and value that say which history of revisions a token space belongs to (see
// etcd_token_source.h): every draw and read is a transaction on the condition that this key still
// holds this value, so a cluster that lost its data (and with it the key) is told apart from the
// one the tokens came from.
struct HistoryGuard {
  std::string key;
  std::string value;
};

std::string base64(std::string_view bytes);
// Errors: kInternal when `text` is not base64.
Result<std::string> unbase64(std::string_view text);

// POST /v3/kv/txn: creates `key` with `value` if it was never written, else reads it and then
// `also` (the answer's second range).
std::string create_or_read_body(std::string_view key, std::string_view value,
                                std::string_view also);
// POST /v3/kv/txn: if the guard holds, a put of `key` with an empty value — a new revision.
std::string guarded_put_body(const HistoryGuard& guard, std::string_view key);
// POST /v3/kv/txn: if the guard holds, a count of `key` — the answer's header carries the
// cluster's revision. A linearizable read: etcd 3.4 serves a transaction whose operations are all
// linearizable ranges through Raft's read index, but one with no operation at all from the
// member's own state (a lagging follower, or one cut off from the leader, answers at once).
std::string guarded_read_body(const HistoryGuard& guard, std::string_view key);

// An answer's header. Errors: kUnavailable with etcd's own message when the answer is an error
// (a non-200 status, or a body with "error"), kInternal when the body is not what the gateway
// sends.
Result<Header> read_header(unsigned status, std::string_view body);
// A transaction answer's first response, a range: the key's mod_revision and value; a
// mod_revision of 0 when the key does not exist. Errors as above.
struct RangeRead {
  std::uint64_t mod_revision = 0;
  std::string value;
};
Result<RangeRead> read_first_range(std::string_view body);
// The same for the answer's range at `index`.
Result<RangeRead> read_range(std::string_view body, std::size_t index);

}  // namespace fencelock::storage::etcd
