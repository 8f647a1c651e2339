#include "tcp_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "loopback.h"

namespace fencelock::testing {

namespace {

// Copies what is readable on `from` to `to`; false when either side is finished.
bool relay(int from, int to) {
  char buffer[16384];
  const ssize_t got = ::read(from, buffer, sizeof(buffer));
  if (got <= 0) return got < 0 && errno == EINTR;
  for (ssize_t sent = 0; sent < got;) {
    const ssize_t n = ::send(to, buffer + sent, static_cast<std::size_t>(got - sent), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += n;
  }
  return true;
}

}  // namespace

TcpProxy::TcpProxy(std::uint16_t target) : target_(target) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = loopback_address(0);
  socklen_t len = sizeof(addr);
  if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listener_, 64) != 0 ||
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      ::pipe2(wake_, O_CLOEXEC) != 0) {
    const std::string why = std::strerror(errno);
    if (listener_ >= 0) ::close(listener_);
    throw std::runtime_error("tcp proxy: " + why);
  }
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { run(); });
}

TcpProxy::~TcpProxy() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  const char byte = 's';
  [[maybe_unused]] const ssize_t ignored = ::write(wake_[1], &byte, 1);
  thread_.join();
  for (const Pair& pair : pairs_) {
    ::close(pair.client);
    ::close(pair.upstream);
  }
  ::close(listener_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void TcpProxy::retarget(std::uint16_t target) {
  std::unique_lock<std::mutex> guard(mutex_);
  target_ = target;
  const std::uint64_t ticket = ++requested_;
  const char byte = 'r';
  [[maybe_unused]] const ssize_t ignored = ::write(wake_[1], &byte, 1);
  switched_.wait(guard, [&] { return done_ >= ticket; });
}

void TcpProxy::switch_upstreams() {
  std::uint16_t target = 0;
  std::uint64_t ticket = 0;
  {
    std::lock_guard<std::mutex> guard(mutex_);
    if (done_ == requested_) return;
    target = target_;
    ticket = requested_;
  }
  std::vector<Pair> kept;
  for (Pair pair : pairs_) {
    ::close(pair.upstream);
    pair.upstream = connect_loopback(target);
    if (pair.upstream < 0) {
      ::close(pair.client);
      continue;
    }
    kept.push_back(pair);
  }
  pairs_.swap(kept);
  {
    std::lock_guard<std::mutex> guard(mutex_);
    done_ = ticket;
  }
  switched_.notify_all();
}

void TcpProxy::run() {
  for (;;) {
    std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listener_, POLLIN, 0}};
    for (const Pair& pair : pairs_) {
      fds.push_back({pair.client, POLLIN, 0});
      fds.push_back({pair.upstream, POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents != 0) {
      char drained[64];
      [[maybe_unused]] const ssize_t ignored = ::read(wake_[0], drained, sizeof(drained));
      {
        std::lock_guard<std::mutex> guard(mutex_);
        if (stopping_) return;
      }
      switch_upstreams();
      continue;  // the pairs changed: poll again
    }
    std::vector<Pair> alive;
    for (std::size_t i = 0; i < pairs_.size(); ++i) {
      const Pair pair = pairs_[i];
      const short from_client = fds[2 + 2 * i].revents;
      const short from_upstream = fds[3 + 2 * i].revents;
      const bool ok = (from_client == 0 || relay(pair.client, pair.upstream)) &&
                      (from_upstream == 0 || relay(pair.upstream, pair.client));
      if (ok) {
        alive.push_back(pair);
      } else {
        ::close(pair.client);
        ::close(pair.upstream);
      }
    }
    pairs_.swap(alive);
    if (fds[1].revents != 0) {
      const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) {
        std::uint16_t target = 0;
        {
          std::lock_guard<std::mutex> guard(mutex_);
          target = target_;
        }
        const int upstream = connect_loopback(target);
        if (upstream < 0) {
          ::close(client);
        } else {
          pairs_.push_back({client, upstream});
        }
      }
    }
  }
}

}  // namespace fencelock::testing
