#include "raw_socket.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "loopback.h"

namespace fencelock::testing {

RawSocket::RawSocket(std::uint16_t port, unsigned source_host)
    : fd_(connect_loopback(port, false, source_host)) {
  timeval timeout{};
  timeout.tv_usec = 200'000;
  if (fd_ >= 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
}

RawSocket::~RawSocket() {
  if (fd_ >= 0) ::close(fd_);
}

bool RawSocket::send(const std::string& bytes) {
  return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
         static_cast<ssize_t>(bytes.size());
}

std::string RawSocket::read_until_closed(std::chrono::milliseconds limit) {
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  char buffer[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
    if (n == 0) {
      closed_ = true;
      break;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      closed_ = true;  // reset
      break;
    }
    got.append(buffer, static_cast<std::size_t>(n));
  }
  return got;
}

unsigned first_status(const std::string& bytes) {
  if (bytes.rfind("HTTP/1.1 ", 0) != 0 || bytes.size() < 12) return 0;
  return static_cast<unsigned>(std::stoi(bytes.substr(9, 3)));
}

std::size_t count_responses(const std::string& bytes) {
  std::size_t count = 0;
  for (std::size_t at = bytes.find("HTTP/1.1 "); at != std::string::npos;
       at = bytes.find("HTTP/1.1 ", at + 1)) {
    ++count;
  }
  return count;
}

namespace {

// A "Name:   N kB" line of /proc/PID/status, in KiB; -1 if absent.
std::int64_t status_kib(pid_t pid, std::string_view field) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(field, 0) == 0) return std::stoll(line.substr(field.size()));
  }
  return -1;
}

}  // namespace

std::int64_t resident_kib(pid_t pid) {
  return status_kib(pid, "VmRSS:");
}

std::int64_t peak_resident_kib(pid_t pid) {
  return status_kib(pid, "VmHWM:");
}

std::int64_t open_descriptors(pid_t pid) {
  std::int64_t count = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    ++count;
  }
  return count;
}

}  // namespace fencelock::testing
