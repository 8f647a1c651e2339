// One raw loopback connection for hostile HTTP tests: sends bytes as they are, reads until the
// server closes, with a short receive timeout. And what those tests read of the server process.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace fencelock::testing {

class RawSocket {
 public:
  // Connects to 127.0.0.<1 + source_host>... as connect_loopback() (loopback.h) does.
  explicit RawSocket(std::uint16_t port, unsigned source_host = 0);
  ~RawSocket();
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  bool ok() const { return fd_ >= 0; }
  // False once the peer has closed (or reset) the connection.
  bool send(const std::string& bytes);
  // Everything the server sends until it closes, or until `limit` passes.
  std::string read_until_closed(std::chrono::milliseconds limit);
  bool closed() const { return closed_; }

 private:
  int fd_;
  bool closed_ = false;
};

// The status code of the first response in `bytes`, 0 when there is none.
unsigned first_status(const std::string& bytes);
// How many responses `bytes` holds.
std::size_t count_responses(const std::string& bytes);
// The resident set of process `pid` in KiB (VmRSS), -1 if unknown.
std::int64_t resident_kib(pid_t pid);
// Its peak resident set in KiB (VmHWM), -1 if unknown.
std::int64_t peak_resident_kib(pid_t pid);
// The open descriptors of process `pid`.
std::int64_t open_descriptors(pid_t pid);

}  // namespace fencelock::testing
