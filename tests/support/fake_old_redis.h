// A RESP peer on a loopback port that introduces itself as an old Redis: it answers the first
// command of every connection with an INFO text naming `version` (and a run_id and uptime), and
// every later one with an error. Enough for a handshake to find the version it must refuse; there
// is no older redis-server on this machine to start. Stops (and joins its thread) when destroyed.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

namespace fencelock::testing {

class FakeOldRedis {
 public:
  explicit FakeOldRedis(std::string version);
  ~FakeOldRedis();
  FakeOldRedis(const FakeOldRedis&) = delete;
  FakeOldRedis& operator=(const FakeOldRedis&) = delete;

  std::uint16_t port() const noexcept { return port_; }

 private:
  void serve();

  std::string version_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace fencelock::testing
