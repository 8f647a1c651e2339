// systemd's readiness protocol (sd_notify(3)) without libsystemd. When fencelockd runs as a
// Type=notify unit, systemd names a datagram socket in $NOTIFY_SOCKET; ReadinessNotifier sends
// "READY=1" the first time /readyz would answer 200, "STATUS=…" whenever what it would say
// changes, and "STOPPING=1" when a shutdown starts. Without $NOTIFY_SOCKET nothing runs.
// Threading: start() and stopping() from any thread; the checks run on a strand of the io_context.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>

namespace fencelock::service {

// One datagram socket to systemd's notification socket: a path, or "@name" (abstract).
class SystemdSocket {
 public:
  // An empty `address` (no $NOTIFY_SOCKET) makes a socket that sends nothing.
  explicit SystemdSocket(std::string address);
  ~SystemdSocket();
  SystemdSocket(const SystemdSocket&) = delete;
  SystemdSocket& operator=(const SystemdSocket&) = delete;

  bool enabled() const noexcept { return !address_.empty(); }
  // Sends `state` (lines of VAR=value) without ever blocking; false when it could not be sent
  // (systemd went away, the address is too long): the service runs on regardless.
  bool send(std::string_view state) const noexcept;

 private:
  std::string address_;
  int fd_ = -1;
};

class ReadinessNotifier {
 public:
  static constexpr std::chrono::milliseconds kCheckEvery{250};
  // What /readyz would say now, in one line, and whether it would answer 200.
  struct Readiness {
    bool ready = false;
    std::string status;
  };

  ReadinessNotifier(boost::asio::io_context& io, std::string socket_address,
                    std::function<Readiness()> readiness);
  // Checks now and every kCheckEvery; does nothing without a socket.
  void start();
  // Stops the checks and sends STOPPING=1.
  void stopping();

 private:
  void check();

  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  boost::asio::steady_timer timer_;
  SystemdSocket socket_;
  std::function<Readiness()> readiness_;
  bool told_ready_ = false;
  bool stopped_ = false;
  std::string last_status_;
};

}  // namespace fencelock::service
