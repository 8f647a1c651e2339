// A loopback TCP relay for tests that need "the same address now answers from another server"
// without the client's connection dropping — what a proxy or a load balancer in front of Redis
// does when its backend is swapped.
//
// Clients connect to port(); each connection is relayed byte for byte to the target port.
// retarget() moves every open connection to a new upstream (the client's socket stays open; bytes
// in flight at that moment may be lost, so retarget while idle) and sends new connections there.
// One thread relays everything with poll(2); meant for a handful of connections, not for load.
//
// Thread safety: port() and retarget() may be called from any thread. The destructor closes
// every socket and joins the thread; it never throws.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace fencelock::testing {

class TcpProxy {
 public:
  // Listens on a free loopback port. Throws std::runtime_error if it cannot.
  explicit TcpProxy(std::uint16_t target);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  std::uint16_t port() const noexcept { return port_; }

  // Returns once every open connection relays to `target` (a connection whose new upstream
  // refuses is closed).
  void retarget(std::uint16_t target);

 private:
  struct Pair {
    int client;
    int upstream;
  };
  void run();
  void switch_upstreams();

  int listener_ = -1;
  int wake_[2] = {-1, -1};
  std::uint16_t port_ = 0;
  std::vector<Pair> pairs_;  // relay thread only

  std::mutex mutex_;
  std::condition_variable switched_;
  std::uint16_t target_;
  std::uint64_t requested_ = 0;  // retargets asked for
  std::uint64_t done_ = 0;       // retargets carried out
  bool stopping_ = false;
  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace fencelock::testing
