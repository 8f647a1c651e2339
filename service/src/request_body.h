// Parsing and validation of API v1 request bodies: parse → validate, nothing else.
//
// Every failure is storage::ErrorCode::kInvalidArgument (→ 400 invalid_request) with a message
// that names the field. Unknown fields are ignored (forward compatibility). Pure; thread-safe.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "fencelock/storage/lease_secret.h"
#include "fencelock/storage/result.h"

namespace fencelock::service {

inline constexpr std::size_t kMaxOwnerLength = 200;
// The longest lease fencelockd hands out (lease_codec.h): a token of up to 20 digits (an etcd
// source's floor may be up to 2^62), '.', the proof.
inline constexpr std::size_t kMaxLeaseLength = 20 + 1 + storage::kLeaseProofLength;

struct BodyLimits {
  std::chrono::milliseconds min_ttl{10};
  std::chrono::milliseconds max_ttl{3'600'000};
  std::chrono::milliseconds max_wait{60'000};
};

struct AcquireBody {
  std::chrono::milliseconds ttl{0};
  std::chrono::milliseconds wait{0};
  std::string owner;  // optional, for logs; at most kMaxOwnerLength characters
};

struct ExtendBody {
  std::string lease;
  std::chrono::milliseconds ttl{0};
};

struct ReleaseBody {
  std::string lease;
};

// {"ttl_ms": int, "wait_ms": int (optional, default 0), "owner": string (optional)}
storage::Result<AcquireBody> parse_acquire_body(std::string_view body, const BodyLimits& limits);
// {"lease": string, "ttl_ms": int}
storage::Result<ExtendBody> parse_extend_body(std::string_view body, const BodyLimits& limits);
// {"lease": string}
storage::Result<ReleaseBody> parse_release_body(std::string_view body);

}  // namespace fencelock::service
