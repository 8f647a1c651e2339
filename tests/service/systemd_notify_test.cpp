// Type=notify: fencelockd tells systemd READY=1 only once /readyz answers 200, keeps STATUS=
// up to date, and says STOPPING=1 on SIGTERM. A datagram socket in a temporary directory plays
// systemd's $NOTIFY_SOCKET; real redis-servers and the real fencelockd binary.
#include "ops/systemd_notify.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstring>
#include <string>
#include <vector>

#include "fencelockd_process.h"
#include "http_client.h"
#include "redis_cluster.h"
#include "service_under_test.h"
#include "temp_dir.h"

using namespace fencelock::testing;
using namespace std::chrono_literals;

namespace {

// A bound datagram socket: what systemd listens on.
class NotifySocket {
 public:
  explicit NotifySocket(std::string address) : address_(std::move(address)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_un at{};
    at.sun_family = AF_UNIX;
    REQUIRE(address_.size() < sizeof(at.sun_path));
    std::memcpy(at.sun_path, address_.data(), address_.size());
    if (at.sun_path[0] == '@') at.sun_path[0] = '\0';
    const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address_.size());
    REQUIRE(::bind(fd_, reinterpret_cast<const sockaddr*>(&at), length) == 0);
  }
  ~NotifySocket() { ::close(fd_); }
  NotifySocket(const NotifySocket&) = delete;
  NotifySocket& operator=(const NotifySocket&) = delete;

  const std::string& address() const { return address_; }
  // The next datagram within `limit`, "" if none came.
  std::string receive(std::chrono::milliseconds limit) {
    pollfd ready{fd_, POLLIN, 0};
    if (::poll(&ready, 1, static_cast<int>(limit.count())) != 1) return "";
    char buffer[4096];
    const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
    return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : "";
  }
  // Datagrams until one contains `what` (returned), or "" after `limit`; every one is kept in
  // seen().
  std::string receive_until(std::string_view what, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      std::string message = receive(std::max(left, 1ms));
      if (message.empty()) continue;
      seen_.push_back(message);
      if (message.find(what) != std::string::npos) return message;
    }
    return "";
  }
  const std::vector<std::string>& seen() const { return seen_; }

 private:
  std::string address_;
  int fd_ = -1;
  std::vector<std::string> seen_;
};

}  // namespace

TEST_CASE("systemd socket: sends to a path and to an abstract name, nothing without an address",
          "[service]") {
  TempDir dir;
  NotifySocket by_path((dir.path() / "notify").string());
  fencelock::service::SystemdSocket to_path(by_path.address());
  CHECK(to_path.enabled());
  CHECK(to_path.send("STATUS=hello\n"));
  CHECK(by_path.receive(1s) == "STATUS=hello\n");

  NotifySocket abstract("@fencelock-notify-test-" + std::to_string(::getpid()));
  fencelock::service::SystemdSocket to_abstract(abstract.address());
  CHECK(to_abstract.send("READY=1\n"));
  CHECK(abstract.receive(1s) == "READY=1\n");

  fencelock::service::SystemdSocket nowhere("");
  CHECK_FALSE(nowhere.enabled());
  CHECK_FALSE(nowhere.send("READY=1\n"));
  fencelock::service::SystemdSocket gone((dir.path() / "nobody-listens").string());
  CHECK_FALSE(gone.send("READY=1\n"));  // systemd went away: the service runs on
}

TEST_CASE("fencelockd tells systemd it is ready only when /readyz answers 200, and when it stops",
          "[service][redis]") {
  RedisCluster cluster(3);
  TempDir dir;
  NotifySocket systemd((dir.path() / "notify").string());
  // Two of three nodes do not answer: no quorum, not ready.
  cluster.node(1).pause();
  cluster.node(2).pause();
  Fencelockd daemon(dir.path(),
                    {"--redis", join_addresses(cluster.addresses()), "--tokens",
                     "sqlite:" + (dir.path() / "tokens.db").string()},
                    {"NOTIFY_SOCKET=" + systemd.address()});
  const std::string waiting = systemd.receive_until("STATUS=", 5s);
  CHECK_THAT(waiting, Catch::Contains("STATUS=not ready: 1 of 3 lock nodes vote (2 needed)") ||
                          Catch::Contains("STATUS=not ready: 0 of 3 lock nodes vote (2 needed)"));
  CHECK(systemd.receive_until("READY=1", 1s).empty());
  HttpClient http(daemon.port());
  CHECK(http.get("/readyz").status == 503);

  cluster.node(1).resume();
  cluster.node(2).resume();
  const std::string ready = systemd.receive_until("READY=1", 15s);
  REQUIRE_THAT(ready, Catch::Contains("READY=1"));
  CHECK_THAT(ready, Catch::Contains("STATUS=ready: 3 of 3 lock nodes vote"));
  CHECK(http.get("/readyz").status == 200);  // READY=1 is never sent ahead of /readyz
  for (const std::string& before : systemd.seen()) {
    if (before != ready) CHECK_THAT(before, !Catch::Contains("READY=1"));
  }

  CHECK(daemon.stop(SIGTERM) == 0);
  CHECK_THAT(systemd.receive_until("STOPPING=1", 1s), Catch::Contains("STOPPING=1"));
}
