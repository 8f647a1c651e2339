#include "ops/systemd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cstring>
#include <utility>

namespace fencelock::service {

SystemdSocket::SystemdSocket(std::string address) : address_(std::move(address)) {
  if (address_.empty()) return;
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
}

SystemdSocket::~SystemdSocket() {
  if (fd_ >= 0) ::close(fd_);
}

bool SystemdSocket::send(std::string_view state) const noexcept {
  if (fd_ < 0) return false;
  sockaddr_un to{};
  to.sun_family = AF_UNIX;
  if (address_.size() >= sizeof(to.sun_path) || (address_[0] != '/' && address_[0] != '@')) {
    return false;
  }
  std::memcpy(to.sun_path, address_.data(), address_.size());
  if (to.sun_path[0] == '@') to.sun_path[0] = '\0';  // the abstract namespace
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address_.size());
  return ::sendto(fd_, state.data(), state.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
                  reinterpret_cast<const sockaddr*>(&to),
                  length) == static_cast<ssize_t>(state.size());
}

ReadinessNotifier::ReadinessNotifier(boost::asio::io_context& io, std::string socket_address,
                                     std::function<Readiness()> readiness)
    : strand_(boost::asio::make_strand(io)),
      timer_(strand_),
      socket_(std::move(socket_address)),
      readiness_(std::move(readiness)) {}

void ReadinessNotifier::start() {
  if (socket_.enabled()) boost::asio::post(strand_, [this] { check(); });
}

void ReadinessNotifier::check() {
  if (stopped_) return;
  const Readiness now = readiness_();
  std::string message;
  if (now.ready && !told_ready_) {
    told_ready_ = true;
    message = "READY=1\n";
  }
  if (now.status != last_status_) {
    last_status_ = now.status;
    message += "STATUS=" + now.status + "\n";
  }
  if (!message.empty()) socket_.send(message);
  timer_.expires_after(kCheckEvery);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) check();
  });
}

void ReadinessNotifier::stopping() {
  if (!socket_.enabled()) return;
  boost::asio::post(strand_, [this] {
    if (stopped_) return;
    stopped_ = true;
    timer_.cancel();
    socket_.send("STOPPING=1\nSTATUS=shutting down\n");
  });
}

}  // namespace fencelock::service
