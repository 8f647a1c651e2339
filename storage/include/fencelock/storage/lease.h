// What the engine hands out and reports: leases, extensions and lock status.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace fencelock::storage {

struct AcquireRequest {
  std::string name;                     // 1..kMaxLockNameBytes bytes
  std::chrono::milliseconds ttl{0};     // within [min_ttl, max_ttl]
  std::chrono::milliseconds wait{0};    // retry budget, within [0, max_wait]; 0 = one attempt
};

// A granted lock. The secret is what release and extend prove ownership with: never log it.
struct Lease {
  std::string name;
  std::string secret;
  std::uint64_t token = 0;  // fencing token; 0 only when the engine runs without a token source
  std::chrono::milliseconds ttl{0};
  // How long after `started` the lease may be trusted (ttl − elapsed − drift, whole ms, >= 1 ms).
  std::chrono::milliseconds validity{0};
  // Engine steady-clock time taken before the first Redis request of the granting attempt.
  std::chrono::steady_clock::time_point started{};

  std::chrono::steady_clock::time_point valid_until() const { return started + validity; }
};

// A successful extend: the lease's key expires `ttl` after the extend, and may be trusted for
// `validity` after `started` (taken before the first Redis request of the extend).
struct Extension {
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
