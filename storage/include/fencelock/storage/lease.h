// What the engine hands out and reports: leases, extensions and lock status.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace fencelock::storage {

struct AcquireRequest {
  std::string name;                  // a valid lock name (fencelock/names.h)
  std::chrono::milliseconds ttl{0};  // within [min_ttl, max_ttl]
  // How long to keep trying while the lock is held by another lease, within [0, max_wait]. Every
  // acquire makes at least one attempt, however short its wait; it never waits out an outage
  // (kUnavailable is answered as soon as an attempt finds too few nodes, or the token source down).
  std::chrono::milliseconds wait{0};
  // Who the lease is for (an API key's id; "" without keys): the lease's proof is bound to it, so
  // only a claim with the same owner extends or releases it. At most kMaxLeaseOwnerLength
  // characters of [A-Za-z0-9._-] (checked: kInvalidArgument).
  std::string owner;
};

// A granted lock. The proof (with the token) is what release and extend prove ownership with:
// never log it. See lease_secret.h.
struct Lease {
  std::string name;
  std::string proof;        // kLeaseProofLength hex digits, bound to `token`
  std::uint64_t token = 0;  // fencing token; 0 only when the engine runs without a token source
  std::chrono::milliseconds ttl{0};
  // How long after `started` the lease may be trusted (ttl − elapsed − drift, whole ms, >= 1 ms).
  std::chrono::milliseconds validity{0};
  // Engine steady-clock time taken before the first Redis request of the granting attempt.
  std::chrono::steady_clock::time_point started{};
  // Time from the start of the acquire call to `started` (whole ms, rounded down): how long it
  // waited for the lock. A client that adds it and `validity` to its own send time gets a deadline
  // never later than the truth, however long the acquire waited.
  std::chrono::milliseconds waited{0};

  std::chrono::steady_clock::time_point valid_until() const { return started + validity; }
};

// What a holder presents to extend or release its lease: the token it was granted with, the proof
// that came with it, and the owner it was granted to (AcquireRequest::owner). A claim whose token
// or owner is not the lease's own is refused (kInvalidArgument).
struct LeaseClaim {
  std::uint64_t token = 0;
  std::string proof;
  std::string owner;
};

// A successful extend: the lease's key expires no earlier than `ttl` after the extend, and may be
// trusted for `validity` after `started` (taken before the first Redis request of the extend).
struct Extension {
  std::uint64_t token = 0;  // the lease's token, verified by the nodes
  std::chrono::milliseconds ttl{0};
  std::chrono::milliseconds validity{0};
  std::chrono::steady_clock::time_point started{};
};

// What inspect learned. Never contains the holder's secret.
struct LockStatus {
  bool held = false;  // one lease value is present on a quorum of voting nodes
  // When held: time until fewer than a quorum of nodes still hold it.
  std::optional<std::chrono::milliseconds> remaining;
};

}  // namespace fencelock::storage
