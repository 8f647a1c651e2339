#include "session_host.h"

namespace fencelock::service {

bool SessionHost::add(const std::shared_ptr<HttpSession>& session) {
  if (open_.load(std::memory_order_relaxed) >= options_.max_connections) return false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sessions_.emplace(session.get(), session);
  }
  open_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void SessionHost::forget(HttpSession* session) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (sessions_.erase(session) == 0) return;
  }
  open_.fetch_sub(1, std::memory_order_relaxed);
  check_drained();
}

std::vector<std::shared_ptr<HttpSession>> SessionHost::drain(std::function<void()> drained) {
  draining_ = true;
  std::vector<std::shared_ptr<HttpSession>> live;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    drained_ = std::move(drained);
    for (auto& [raw, weak] : sessions_) {
      if (auto session = weak.lock()) live.push_back(std::move(session));
    }
  }
  check_drained();
  return live;
}

std::function<void()> SessionHost::take_drained() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::function<void()> drained = std::move(drained_);
  drained_ = nullptr;
  return drained;
}

void SessionHost::check_drained() {
  std::function<void()> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!draining_ || !sessions_.empty() || !drained_) return;
    done = std::move(drained_);
    drained_ = nullptr;
  }
  done();
}

}  // namespace fencelock::service
