// A granted lock as the SDK holds it: name, fencing token, and a conservative deadline.
//
// The deadline is the client's own send time of the granting (or last extending) request plus the
// waited_ms (acquire only) and validity_ms the service answered, on std::chrono::steady_clock —
// never later than the truth, however long a waiting acquire waited.
// Send `token()` with every write to the protected resource. The lease string (lease_string())
// proves ownership for extend and release: treat it as a secret, do not log it.
//
// Move-only. Releasing on destruction is LockGuard's job, not Lease's. Not thread-safe; the
// deadline of a lease kept alive by a LeaseKeeper is read through the keeper instead.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace fencelock {

class Lease {
 public:
  using Clock = std::chrono::steady_clock;

  Lease(std::string name, std::string lease_string, std::uint64_t token,
        std::chrono::milliseconds ttl, Clock::time_point deadline);
  Lease(Lease&&) noexcept = default;
  Lease& operator=(Lease&&) noexcept = default;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  const std::string& name() const noexcept { return name_; }
  std::uint64_t token() const noexcept { return token_; }
  std::chrono::milliseconds ttl() const noexcept { return ttl_; }
  Clock::time_point deadline() const noexcept { return deadline_; }
  const std::string& lease_string() const noexcept { return lease_string_; }

  // True until the deadline. A valid() lease may still have been taken over by a newer holder if
  // this process was paused; that is what the token is for.
  bool valid() const noexcept { return Clock::now() < deadline_; }
  // Time left until the deadline, zero once it passed.
  std::chrono::milliseconds remaining() const noexcept;

  // Used by Client::extend: a successful extend moves the deadline.
  void renew(std::chrono::milliseconds ttl, Clock::time_point deadline) noexcept {
    ttl_ = ttl;
    deadline_ = deadline;
  }

 private:
  std::string name_;
  std::string lease_string_;
  std::uint64_t token_;
  std::chrono::milliseconds ttl_;
  Clock::time_point deadline_;
};

}  // namespace fencelock
