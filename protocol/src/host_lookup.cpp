#include "fencelock/host_lookup.h"

#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace fencelock {

BasicResult<std::vector<std::string>, std::string> lookup_host(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0) return std::string(rc == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(rc));
  std::vector<std::string> addresses;
  for (const addrinfo* entry = found; entry != nullptr; entry = entry->ai_next) {
    if (entry->ai_family != AF_INET && entry->ai_family != AF_INET6) continue;
    char text[NI_MAXHOST];
    if (::getnameinfo(entry->ai_addr, entry->ai_addrlen, text, sizeof text, nullptr, 0,
                      NI_NUMERICHOST) == 0) {
      addresses.emplace_back(text);
    }
  }
  ::freeaddrinfo(found);
  if (addresses.empty()) return std::string("no IPv4 or IPv6 address");
  return addresses;
}

}  // namespace fencelock
