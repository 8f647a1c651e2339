#include "loopback.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace fencelock::testing {

sockaddr_in loopback_address(std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  return addr;
}

int connect_loopback(std::uint16_t port, bool nonblocking, unsigned source_host) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (source_host != 0) {
    sockaddr_in source = loopback_address(0);
    source.sin_addr.s_addr = htonl((127U << 24) | (source_host & 0xffU));
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&source), sizeof(source)) != 0) {
      ::close(fd);
      return -1;
    }
  }
  const sockaddr_in addr = loopback_address(port);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  if (nonblocking) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

}  // namespace fencelock::testing
