#include "auth/auth_reloader.h"

#include <csignal>

#include "log.h"

namespace fencelock::service {

AuthReloader::AuthReloader(boost::asio::io_context& io, std::filesystem::path path,
                           Authorizer& authorizer)
    : signals_(io, SIGHUP), path_(std::move(path)), authorizer_(authorizer) {}

AuthReloader::~AuthReloader() {
  stop();
}

void AuthReloader::start() {
  wait_for_signal();
}

void AuthReloader::stop() {
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

void AuthReloader::wait_for_signal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec) return;
    reload_in_background();
    wait_for_signal();
  });
}

void AuthReloader::reload_in_background() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (running_) {  // the running read may have missed the newest file: read once more after it
    pending_ = true;
    return;
  }
  if (worker_.joinable()) worker_.join();  // finished: running_ is false
  running_ = true;
  worker_ = std::thread([this] {
    for (;;) {
      auto keys = KeySet::load(path_);
      if (keys.ok()) {
        const std::size_t count = keys->keys().size();
        authorizer_.replace(std::move(keys).value());
        log_event(LogLevel::kInfo, "auth_file_reloaded",
                  "path=" + path_.string() + " keys=" + std::to_string(count));
      } else {
        log_event(LogLevel::kError, "auth_file_rejected",
                  "reason=\"" + keys.error().message + "\" (the previous keys stay in force)");
      }
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
