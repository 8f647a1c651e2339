#include "sighup_reloader.h"

#include <csignal>

namespace fencelock::service {

SighupReloader::SighupReloader(boost::asio::io_context& io, std::function<void()> reload)
    : signals_(io, SIGHUP), reload_(std::move(reload)) {}

SighupReloader::~SighupReloader() {
  stop();
}

void SighupReloader::start() {
  wait_for_signal();
}

void SighupReloader::stop() {
  boost::system::error_code ignored;
  signals_.cancel(ignored);
  std::thread worker;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_ = false;
    worker = std::move(worker_);
  }
  if (worker.joinable()) worker.join();
}

void SighupReloader::wait_for_signal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    reload_in_background();
    wait_for_signal();
  });
}

void SighupReloader::reload_in_background() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (running_) {  // the running reload may have missed the newest files: run once more after it
    pending_ = true;
    return;
  }
  if (worker_.joinable()) worker_.join();  // finished: running_ is false
  running_ = true;
  worker_ = std::thread([this] {
    for (;;) {
      reload_();
      std::lock_guard<std::mutex> again(mutex_);
      if (!pending_) {
        running_ = false;
        return;
      }
      pending_ = false;
    }
  });
}

}  // namespace fencelock::service
