#include "ops/sighup_reloader.h"

#include <csignal>
#include <string>

#include "ops/log.h"

namespace fencelock::service {

SighupReloader::SighupReloader(boost::asio::io_context& io, std::function<void()> reload)
    : signals_(io, SIGHUP), state_(std::make_shared<State>()) {
  state_->reload = std::move(reload);
}

SighupReloader::~SighupReloader() {
  stop();
  finish(std::chrono::milliseconds(0));
}

void SighupReloader::start() {
  wait_for_signal();
}

void SighupReloader::stop() {
  boost::system::error_code ignored;
  signals_.cancel(ignored);
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->pending = false;
  state_->stopped = true;
}

bool SighupReloader::finish(std::chrono::milliseconds limit) {
  bool idle = false;
  {
    std::unique_lock<std::mutex> lock(state_->mutex);
    idle = state_->idle.wait_for(lock, limit, [this] { return !state_->running; });
  }
  if (!worker_.joinable()) return true;
  if (idle) {
    worker_.join();  // it has left its loop: only its return is left
    return true;
  }
  // Joining could wait forever (a read that never returns). The thread holds the shared state and
  // the reload function, so it touches nothing that goes away with us.
  worker_.detach();
  return false;
}

void SighupReloader::wait_for_signal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    reload_in_background();
    wait_for_signal();
  });
}

void SighupReloader::reload_in_background() {
  std::unique_lock<std::mutex> lock(state_->mutex);
  if (state_->stopped) return;
  if (state_->running) {  // the running reload may have missed the newest files: run once more
    state_->pending = true;
    const auto running_for = std::chrono::steady_clock::now() - state_->started;
    if (running_for >= kStillRunningAfter) {
      lock.unlock();
      log_event(LogLevel::kWarning, "reload_still_running",
                "running_for_s=" +
                    std::to_string(
                        std::chrono::duration_cast<std::chrono::seconds>(running_for).count()) +
                    " reason=\"the previous reload has not finished: is a file it reads blocking "
                    "(a FIFO, "
                    "a hung mount)? This SIGHUP is applied after it\"");
    }
    return;
  }
  // Not running: the thread has left its loop (or never started), so this join is immediate.
  if (worker_.joinable()) worker_.join();
  state_->running = true;
  state_->started = std::chrono::steady_clock::now();
  worker_ = std::thread([state = state_] {
    for (;;) {
      state->reload();
      std::lock_guard<std::mutex> again(state->mutex);
      if (!state->pending || state->stopped) {
        state->running = false;
        state->idle.notify_all();
        return;
      }
      state->pending = false;
      state->started = std::chrono::steady_clock::now();
    }
  });
}

}  // namespace fencelock::service
