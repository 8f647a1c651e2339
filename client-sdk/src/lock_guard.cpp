#include "fencelock/lock_guard.h"

#include <cstdio>

namespace fencelock {

LockGuard::LockGuard(Client& client, Lease lease, ReleaseFailed on_release_failed)
    : client_(&client),
      lease_(std::move(lease)),
      on_release_failed_(std::move(on_release_failed)) {}

LockGuard::LockGuard(LockGuard&& other) noexcept
    : client_(other.client_),
      lease_(std::move(other.lease_)),
      on_release_failed_(std::move(other.on_release_failed_)),
      released_(other.released_) {
  other.released_ = true;  // the moved-from guard releases nothing
}

Result<bool> LockGuard::release() {
  released_ = true;
  return client_->release(*lease_);
}

LockGuard::~LockGuard() {
  if (released_ || !lease_) return;
  try {
    auto result = client_->release(*lease_);
    if (result.ok()) return;
    if (on_release_failed_) {
      on_release_failed_(*lease_, result.error());
    } else {
      std::fprintf(
          stderr, "fencelock: releasing lock '%s' failed (%s); it frees itself when its ttl ends\n",
          lease_->name().c_str(), result.error().message.c_str());
    }
  } catch (...) {  // a destructor never throws; the ttl frees the lock
  }
}

}  // namespace fencelock
