#include "fake_old_redis.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <vector>

namespace fencelock::testing {

FakeOldRedis::FakeOldRedis(std::string version) : version_(std::move(version)) {
  listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listener_ < 0) throw std::runtime_error("FakeOldRedis: socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(listener_, 16) != 0 ||
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(listener_);
    throw std::runtime_error("FakeOldRedis: bind/listen");
  }
  port_ = ntohs(address.sin_port);
  thread_ = std::thread([this] { serve(); });
}

FakeOldRedis::~FakeOldRedis() {
  stopping_ = true;
  thread_.join();
  ::close(listener_);
}

void FakeOldRedis::serve() {
  const std::string info =
      "# Server\r\nredis_version:" + version_ +
      "\r\nrun_id:0123456789abcdef0123456789abcdef01234567\r\nuptime_in_seconds:100\r\n";
  const std::string first = "$" + std::to_string(info.size()) + "\r\n" + info + "\r\n";
  std::vector<int> clients;
  while (!stopping_) {  // bounded by the owner's lifetime; each wait is 20 ms
    std::vector<pollfd> fds{{listener_, POLLIN, 0}};
    for (const int c : clients) fds.push_back({c, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
    if ((fds[0].revents & POLLIN) != 0) {
      const int client = ::accept(listener_, nullptr, nullptr);
      if (client >= 0) clients.push_back(client);
    }
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t got = ::recv(fds[i].fd, buffer, sizeof buffer, 0);
      if (got <= 0) {
        ::close(fds[i].fd);
        std::erase(clients, fds[i].fd);
        continue;
      }
      // The handshake pipelines its commands; the first answer (INFO) is all it reads of an old
      // server before giving up on the connection.
      (void)::send(fds[i].fd, first.data(), first.size(), MSG_NOSIGNAL);
    }
  }
  for (const int c : clients) ::close(c);
}

}  // namespace fencelock::testing
