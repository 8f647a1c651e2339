#include "fencelock/lease.h"

namespace fencelock {

Lease::Lease(std::string name, std::string lease_string, std::uint64_t token,
             std::chrono::milliseconds ttl, Clock::time_point deadline)
    : name_(std::move(name)),
      lease_string_(std::move(lease_string)),
      token_(token),
      ttl_(ttl),
      deadline_(deadline) {}

std::chrono::milliseconds Lease::remaining() const noexcept {
  const auto left = deadline_ - Clock::now();
  return left.count() > 0 ? std::chrono::floor<std::chrono::milliseconds>(left)
                          : std::chrono::milliseconds(0);
}

}  // namespace fencelock
