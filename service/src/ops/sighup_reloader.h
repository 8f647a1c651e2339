// Reloads what can change without a restart — the --auth-file's keys, the TLS certificate — on
// SIGHUP. Each reload runs on a thread of its own (file reads and parsing never block the event
// loop); a reload action keeps what is in force and logs why when the new files are bad. One
// reload at a time; a SIGHUP during one is folded into another run after it, and one that comes
// while a reload has been running for kStillRunningAfter logs reload_still_running.
// A reload can block for good (a FIFO, a hung mount): nothing here ever waits for it on the event
// loop. At shutdown finish() waits a bounded time and then lets the thread go; its state and the
// `reload` function are shared with it, so whatever `reload` uses must be owned by that function
// (held by shared_ptr), never borrowed from the caller's stack.
// Threading: start(), stop() and SIGHUP handling on the io_context's threads; finish() and the
// destructor after the io_context has stopped running.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace fencelock::service {

class SighupReloader {
 public:
  static constexpr std::chrono::seconds kStillRunningAfter{2};

  // `reload` runs on the reload thread after each SIGHUP; it must not throw, and it may outlive
  // this object (see above).
  SighupReloader(boost::asio::io_context& io, std::function<void()> reload);
  ~SighupReloader();  // finish(0)
  SighupReloader(const SighupReloader&) = delete;
  SighupReloader& operator=(const SighupReloader&) = delete;

  void start();
  // Stops listening for SIGHUP and drops a reload asked for but not begun. Never blocks: a reload
  // in progress goes on on its own thread.
  void stop();
  // Waits up to `limit` for a reload in progress; returns true when none is left. Otherwise the
  // reload thread is detached (abandoned: the process may exit under it) and false returned.
  bool finish(std::chrono::milliseconds limit);

 private:
  struct State {
    std::function<void()> reload;
    std::mutex mutex;  // guards the fields below
    std::condition_variable idle;
    bool running = false;
    bool pending = false;
    bool stopped = false;
    std::chrono::steady_clock::time_point started;
  };

  void wait_for_signal();
  void reload_in_background();

  boost::asio::signal_set signals_;
  std::shared_ptr<State> state_;
  std::thread worker_;  // touched on the io_context's threads, then by finish()
};

}  // namespace fencelock::service
