// Loopback sockets for the test proxies (tcp_proxy.h, the campaign's fault_proxy.h).
#pragma once

#include <netinet/in.h>

#include <cstdint>

namespace fencelock::testing {

// 127.0.0.1:port as a socket address (port 0: any free port, for bind).
sockaddr_in loopback_address(std::uint16_t port);

// A blocking connect to 127.0.0.1:port (made non-blocking afterwards when asked), or -1.
// `source_host` (1..254) binds the client end to 127.0.0.<source_host> first (0: the kernel
// picks, 127.0.0.1), so a test can be several clients as a server sees them.
int connect_loopback(std::uint16_t port, bool nonblocking = false, unsigned source_host = 0);

}  // namespace fencelock::testing
