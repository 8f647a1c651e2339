// Reloads what can change without a restart — the --auth-file's keys, the TLS certificate — on
// SIGHUP. Each reload runs on a thread of its own (file reads and parsing never block the event
// loop); a reload action keeps what is in force and logs why when the new files are bad. One
// reload at a time; a SIGHUP during one is folded into another run after it.
// Threading: start() and stop() on the io_context's thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <functional>
#include <mutex>
#include <thread>

namespace fencelock::service {

class SighupReloader {
 public:
  // `reload` runs on the reload thread after each SIGHUP; it must not throw.
  SighupReloader(boost::asio::io_context& io, std::function<void()> reload);
  ~SighupReloader();  // stop()s
  SighupReloader(const SighupReloader&) = delete;
  SighupReloader& operator=(const SighupReloader&) = delete;

  void start();
  void stop();  // stops listening for SIGHUP and waits for a reload in progress

 private:
  void wait_for_signal();
  void reload_in_background();

  boost::asio::signal_set signals_;
  std::function<void()> reload_;
  std::mutex mutex_;  // guards worker_, running_ and pending_
  std::thread worker_;
  bool running_ = false;
  bool pending_ = false;
};

}  // namespace fencelock::service
