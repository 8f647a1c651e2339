#include "engine/list_pacer.h"

#include <algorithm>
#include <utility>

namespace fencelock::storage {

void ListPacer::enter(std::function<void()> step) {
  if (busy_ && !stopped_) {
    queued_.push_back(std::move(step));
    return;
  }
  run(step);
}

void ListPacer::run(const std::function<void()>& step) {
  busy_ = true;
  foreground_at_step_ = foreground_;
  step_started_ = std::chrono::steady_clock::now();
  step();
}

void ListPacer::leave() {
  const auto took = std::chrono::steady_clock::now() - step_started_;
  if (stopped_ || foreground_ == foreground_at_step_) {
    next();
    return;
  }
  timer_.expires_after(
      std::min<std::chrono::steady_clock::duration>(took * kListRestFactor, kMaxListRest));
  // Cancelled only by stop() or the pacer's end: then nothing is left to run.
  timer_.async_wait([this](const boost::system::error_code& error) {
    if (!error) next();
  });
}

void ListPacer::next() {
  busy_ = false;
  if (queued_.empty()) return;
  auto step = std::move(queued_.front());
  queued_.pop_front();
  run(step);
}

void ListPacer::stop() {
  stopped_ = true;
  timer_.cancel();
  while (!queued_.empty()) {
    auto step = std::move(queued_.front());
    queued_.pop_front();
    step();
  }
}

}  // namespace fencelock::storage
