// Reloads the --auth-file on SIGHUP. The file is read and parsed on a thread of its own (never on
// the event loop); a good file replaces the keys at once (auth_file_reloaded), a bad one keeps the
// old keys and logs why (auth_file_rejected). One reload at a time; a SIGHUP during one is folded
// into another read after it. Threading: start() and stop() on the io_context's thread.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <filesystem>
#include <mutex>
#include <thread>

#include "auth/authorizer.h"

namespace fencelock::service {

class AuthReloader {
 public:
  AuthReloader(boost::asio::io_context& io, std::filesystem::path path, Authorizer& authorizer);
  ~AuthReloader();  // stop()s
  AuthReloader(const AuthReloader&) = delete;
  AuthReloader& operator=(const AuthReloader&) = delete;

  void start();
  void stop();  // stops listening for SIGHUP and waits for a reload in progress

 private:
  void wait_for_signal();
  void reload_in_background();

  boost::asio::signal_set signals_;
  std::filesystem::path path_;
  Authorizer& authorizer_;
  std::mutex mutex_;  // guards worker_ and pending_
  std::thread worker_;
  bool running_ = false;
  bool pending_ = false;
};

}  // namespace fencelock::service
