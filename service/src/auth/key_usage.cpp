#include "auth/key_usage.h"

#include <algorithm>

namespace fencelock::service {

KeyUsage::KeyUsage(std::optional<std::size_t> max_locks, std::optional<std::size_t> max_waiters)
    : max_locks_(max_locks), max_waiters_(max_waiters) {}

void KeyUsage::reconfigure(std::optional<std::size_t> max_locks,
                           std::optional<std::size_t> max_waiters) {
  std::lock_guard<std::mutex> lock(mutex_);
  max_locks_ = max_locks;
  max_waiters_ = max_waiters;
}

bool KeyUsage::begin_wait() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (max_waiters_ && waiting_ >= *max_waiters_) return false;
  ++waiting_;
  return true;
}

void KeyUsage::end_wait() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (waiting_ > 0) --waiting_;
}

std::size_t KeyUsage::purge(Clock::time_point now) {
  for (auto it = held_.begin(); it != held_.end();) {
    it = it->second <= now ? held_.erase(it) : std::next(it);
  }
  return held_.size();
}

bool KeyUsage::reserve_lock(Clock::time_point now, std::size_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (max_locks_) {
    // Purging is linear in what the key holds, which the cap bounds.
    if (purge(now) + reserved_ + count > *max_locks_) return false;
  }
  reserved_ += count;
  return true;
}

void KeyUsage::cancel_reservation(std::size_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  reserved_ -= std::min(reserved_, count);
}

void KeyUsage::hold(const std::string& lease, Clock::time_point until) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (reserved_ > 0) --reserved_;
  if (max_locks_) held_[lease] = until;  // without a cap nothing needs counting
}

void KeyUsage::renew(const std::string& lease, Clock::time_point until) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = held_.find(lease);
  if (found != held_.end() && found->second < until) found->second = until;
}

void KeyUsage::drop(const std::string& lease) {
  std::lock_guard<std::mutex> lock(mutex_);
  held_.erase(lease);
}

std::optional<std::size_t> KeyUsage::max_locks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return max_locks_;
}

std::optional<std::size_t> KeyUsage::max_waiters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return max_waiters_;
}

std::size_t KeyUsage::held(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  return purge(now);
}

}  // namespace fencelock::service
