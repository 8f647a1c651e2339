#include "fault_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "loopback.h"

namespace fencelock::faults {

namespace {

void close_link(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

FaultProxy::FaultProxy(std::uint16_t target, std::uint64_t seed) : target_(target), random_(seed) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = testing::loopback_address(0);
  socklen_t len = sizeof(addr);
  if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listener_, 64) != 0 ||
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      ::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
    const std::string why = std::strerror(errno);
    if (listener_ >= 0) ::close(listener_);
    throw std::runtime_error("fault proxy: " + why);
  }
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { run(); });
}

FaultProxy::~FaultProxy() {
  {
    const std::lock_guard<std::mutex> guard(mutex_);
    stopping_ = true;
  }
  const char byte = 's';
  [[maybe_unused]] const ssize_t ignored = ::write(wake_[1], &byte, 1);
  thread_.join();
  for (Link& link : links_) {
    close_link(link.client);
    close_link(link.node);
  }
  ::close(listener_);
  ::close(wake_[0]);
  ::close(wake_[1]);
}

void FaultProxy::set_fault(const LinkFault& fault) {
  const std::lock_guard<std::mutex> guard(mutex_);
  fault_ = fault;
}

void FaultProxy::drop_connections() {
  {
    const std::lock_guard<std::mutex> guard(mutex_);
    drop_requested_ = true;
  }
  const char byte = 'd';
  [[maybe_unused]] const ssize_t ignored = ::write(wake_[1], &byte, 1);
}

FaultProxy::Clock::duration FaultProxy::delay(const LinkFault& fault) {
  if (fault.delay.count() == 0 && fault.jitter.count() == 0) return Clock::duration::zero();
  std::uniform_int_distribution<std::int64_t> spread(-fault.jitter.count(), fault.jitter.count());
  return std::chrono::milliseconds(
      std::max<std::int64_t>(0, fault.delay.count() + spread(random_)));
}

// Reads what is readable on one side and queues it for the other (or throws it away); false when
// the side is finished.
bool FaultProxy::pump(Link& link, bool from_client, const LinkFault& fault) {
  char buffer[16384];
  const ssize_t got = ::read(from_client ? link.client : link.node, buffer, sizeof(buffer));
  if (got < 0) return errno == EINTR || errno == EAGAIN;
  if (got == 0) return false;
  if (from_client ? fault.drop_to_node : fault.drop_to_client) return true;
  auto& queue = from_client ? link.to_node : link.to_client;
  // Never overtake an earlier chunk: a later chunk is due no sooner than the one before it.
  Clock::time_point due = Clock::now() + delay(fault);
  if (!queue.empty()) due = std::max(due, queue.back().due);
  queue.push_back({due, std::string(buffer, static_cast<std::size_t>(got))});
  return true;
}

bool FaultProxy::flush(std::deque<Chunk>& queue, int to, Clock::time_point now) {
  while (!queue.empty() && queue.front().due <= now) {
    std::string& bytes = queue.front().bytes;
    const ssize_t sent = ::send(to, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (sent < 0) return errno == EAGAIN || errno == EINTR;  // full: try again later
    bytes.erase(0, static_cast<std::size_t>(sent));
    if (!bytes.empty()) return true;
    queue.pop_front();
  }
  return true;
}

void FaultProxy::run() {
  for (;;) {
    LinkFault fault;
    bool drop = false;
    {
      const std::lock_guard<std::mutex> guard(mutex_);
      if (stopping_) return;
      fault = fault_;
      drop = drop_requested_;
      drop_requested_ = false;
    }
    if (drop) {
      for (Link& link : links_) {
        close_link(link.client);
        close_link(link.node);
      }
      links_.clear();
    }

    const auto now = Clock::now();
    int timeout_ms = 100;  // re-read the fault at least this often
    std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listener_, POLLIN, 0}};
    for (const Link& link : links_) {
      fds.push_back({link.client, POLLIN, 0});
      fds.push_back({link.node, POLLIN, 0});
      for (const auto* queue : {&link.to_node, &link.to_client}) {
        if (queue->empty()) continue;
        const auto wait =
            std::chrono::duration_cast<std::chrono::milliseconds>(queue->front().due - now).count();
        timeout_ms = std::clamp<int>(static_cast<int>(wait) + 1, 1, timeout_ms);
      }
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) {
      char drained[64];
      while (::read(wake_[0], drained, sizeof(drained)) > 0) {
      }
    }

    std::vector<Link> alive;
    for (std::size_t i = 0; i < links_.size(); ++i) {
      Link& link = links_[i];
      const bool from_client = fds[2 + 2 * i].revents != 0;
      const bool from_node = fds[3 + 2 * i].revents != 0;
      bool ok =
          (!from_client || pump(link, true, fault)) && (!from_node || pump(link, false, fault));
      const auto later = Clock::now();
      ok = ok && flush(link.to_node, link.node, later) && flush(link.to_client, link.client, later);
      if (ok) {
        alive.push_back(std::move(link));
      } else {
        close_link(link.client);
        close_link(link.node);
      }
    }
    links_.swap(alive);

    if (fds[1].revents != 0) {
      const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (client >= 0) {
        const int node = testing::connect_loopback(target_, /*nonblocking=*/true);
        if (node < 0) {
          ::close(client);
        } else {
          links_.push_back(Link{client, node, {}, {}});
        }
      }
    }
  }
}

}  // namespace fencelock::faults
