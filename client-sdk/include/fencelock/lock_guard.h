// Scoped ownership of a lease: releases it when the guard goes out of scope.
//
// The destructor never throws. If the release fails (the service is unreachable), the guard reports
// it through the callback given at construction (by default one line on stderr, without the lease
// string) and relies on the lock's ttl: the lock frees itself when the lease expires.
// Move-only; not thread-safe.
#pragma once

#include <functional>
#include <optional>

#include "fencelock/client.h"
#include "fencelock/lease.h"

namespace fencelock {

class LockGuard {
 public:
  using ReleaseFailed = std::function<void(const Lease&, const Error&)>;

  LockGuard(Client& client, Lease lease, ReleaseFailed on_release_failed = {});
  LockGuard(LockGuard&& other) noexcept;
  LockGuard& operator=(LockGuard&&) = delete;
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;
  ~LockGuard();

  const Lease& lease() const noexcept { return *lease_; }
  Lease& lease() noexcept { return *lease_; }

  // Releases now (the destructor then does nothing). true iff the lease still held the lock.
  Result<bool> release();

 private:
  Client* client_;
  std::optional<Lease> lease_;
  ReleaseFailed on_release_failed_;
  bool released_ = false;
};

}  // namespace fencelock
