// Parsing and validation of API v1 request bodies: parse → validate, nothing else.
//
// Every failure is a ServiceError (→ 400 invalid_request) with a message
// that names the field. A field the body does not take is refused too, named, with the field it
// most likely meant ({"wiat_ms": 100} would otherwise not wait). Pure; thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/service_result.h"
#include "fencelock/storage/lease.h"
#include "fencelock/storage/lease_secret.h"

namespace fencelock::service {

inline constexpr std::size_t kMaxOwnerLength = storage::kMaxHolderLength;
// The longest lease fencelockd hands out (lease_codec.h): a token of up to 20 digits (an etcd
// source's floor may be up to 2^62), '.', the proof.
inline constexpr std::size_t kMaxLeaseLength = 20 + 1 + storage::kLeaseProofLength;
// A lock set's lease: up to kMaxLockSetNames comma-separated tokens, '.', the proof.
inline constexpr std::size_t kMaxSetLeaseLength =
    storage::kMaxLockSetNames * 21 - 1 + 1 + storage::kLeaseProofLength;
// A permit's lease: the token, '.', the proof, '.', the permits (≤ 2 digits), '.', the slot.
inline constexpr std::size_t kMaxPermitLeaseLength = kMaxLeaseLength + 1 + 2 + 1 + 2;
// A read/write lock grant's lease: the token, '.', the proof, '.', 'r' or 'w'.
inline constexpr std::size_t kMaxRwLeaseLength = kMaxLeaseLength + 2;

struct BodyLimits {
  std::chrono::milliseconds min_ttl{10};
  std::chrono::milliseconds max_ttl{3'600'000};
  std::chrono::milliseconds max_wait{60'000};
};

struct AcquireBody {
  std::chrono::milliseconds ttl{0};
  std::chrono::milliseconds wait{0};
  // Optional: who asks (storage::AcquireRequest::holder); at most kMaxOwnerLength bytes, no
  // control characters.
  std::string owner;
  // Optional, a single lock's acquire only: names the request
  // (storage::AcquireRequest::request_id).
  std::string request_id{};
};

struct ExtendBody {
  std::string lease;
  std::chrono::milliseconds ttl{0};
};

struct ReleaseBody {
  std::string lease;
};

// A lock set's acquire: AcquireBody and its names (as sent; the engine sorts them).
struct SetAcquireBody {
  std::vector<std::string> names;
  AcquireBody acquire;
};

// A lock set's extend or release: the names (as sent) and ExtendBody / ReleaseBody.
struct SetExtendBody {
  std::vector<std::string> names;
  ExtendBody extend;
};
struct SetReleaseBody {
  std::vector<std::string> names;
  ReleaseBody release;
};

// A permit's acquire: AcquireBody and the semaphore's permit count (1..kMaxPermits).
struct PermitAcquireBody {
  std::uint32_t permits = 0;
  AcquireBody acquire;
};

// A read/write lock's acquire: AcquireBody and the mode.
struct RwAcquireBody {
  storage::RwMode mode = storage::RwMode::kRead;
  AcquireBody acquire;
};

// {"ttl_ms": int, "wait_ms": int (optional, default 0), "owner": string (optional),
//  "request_id": string (optional)}
ServiceResult<AcquireBody> parse_acquire_body(std::string_view body, const BodyLimits& limits);
// {"ttl_ms": int, "owner": string (optional)}: a revoke's (it never waits).
ServiceResult<AcquireBody> parse_revoke_body(std::string_view body, const BodyLimits& limits);
// {"lease": string, "ttl_ms": int}
ServiceResult<ExtendBody> parse_extend_body(std::string_view body, const BodyLimits& limits);
// {"lease": string}
ServiceResult<ReleaseBody> parse_release_body(std::string_view body);

// The "names" of a lock set's body: an array of 1..kMaxLockSetNames distinct valid lock names.
// The messages say which rule failed ("names must hold at most 16 names", "names holds 'a'
// twice", ...). Read before authorization: the names are what the key must hold rights on.
ServiceResult<std::vector<std::string>> parse_set_names(std::string_view body);
// {"names": [...], "ttl_ms": int, "wait_ms": int (optional), "owner": string (optional)}
ServiceResult<SetAcquireBody> parse_set_acquire_body(std::string_view body,
                                                     const BodyLimits& limits);
// {"names": [...], "lease": string, "ttl_ms": int}
ServiceResult<SetExtendBody> parse_set_extend_body(std::string_view body, const BodyLimits& limits);
// {"names": [...], "lease": string}
ServiceResult<SetReleaseBody> parse_set_release_body(std::string_view body);
// {"permits": int (1..kMaxPermits), "ttl_ms": int, "wait_ms": int (optional), "owner": ...}
ServiceResult<PermitAcquireBody> parse_permit_acquire_body(std::string_view body,
                                                           const BodyLimits& limits);
// A permit's extend and release bodies are ExtendBody / ReleaseBody with a longer lease.
ServiceResult<ExtendBody> parse_permit_extend_body(std::string_view body, const BodyLimits& limits);
ServiceResult<ReleaseBody> parse_permit_release_body(std::string_view body);
// {"mode": "read" | "write", "ttl_ms": int, "wait_ms": int (optional), "owner": ...}
ServiceResult<RwAcquireBody> parse_rw_acquire_body(std::string_view body, const BodyLimits& limits);
// A read/write lock's extend and release bodies are ExtendBody / ReleaseBody with its lease.
ServiceResult<ExtendBody> parse_rw_extend_body(std::string_view body, const BodyLimits& limits);
ServiceResult<ReleaseBody> parse_rw_release_body(std::string_view body);

}  // namespace fencelock::service
