#include "engine/list_pacer.h"

#include <algorithm>
#include <utility>

namespace fencelock::storage {

bool ListPacer::enter(std::function<void()> step) {
  if (stopped_ || !busy_) {
    run(step);
    return true;
  }
  if (queued_.size() >= kMaxQueuedListSteps) return false;
  queued_.push_back(std::move(step));
  return true;
}

void ListPacer::run(const std::function<void()>& step) {
  busy_ = true;
  foreground_at_step_ = foreground_;
  step_started_ = std::chrono::steady_clock::now();
  step();
}

void ListPacer::leave() {
  if (stopped_) {  // stop() runs what is queued, one after another (never nested)
    busy_ = false;
    return;
  }
  if (foreground_ == foreground_at_step_) {
    next();
    return;
  }
  const auto took = std::chrono::steady_clock::now() - step_started_;
  timer_.expires_after(
      std::min<std::chrono::steady_clock::duration>(took * kListRestFactor, kMaxListRest));
  timer_.async_wait(
      [this, alive = std::weak_ptr<char>(alive_)](const boost::system::error_code& error) {
        if (!error && !alive.expired() && !stopped_) next();
      });
}

void ListPacer::next() {
  busy_ = false;
  if (draining_) return;  // a step that ended inside run(): the loop below goes on
  draining_ = true;
  while (!busy_ && !stopped_ && !queued_.empty()) {
    auto step = std::move(queued_.front());
    queued_.pop_front();
    run(step);
  }
  draining_ = false;
}

void ListPacer::stop() {
  stopped_ = true;
  timer_.cancel();
  auto queued = std::move(queued_);
  queued_.clear();
  for (const auto& step : queued) run(step);
}

}  // namespace fencelock::storage
