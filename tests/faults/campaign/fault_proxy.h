// A loopback TCP relay between one fencelockd and one lock node that can misbehave on command:
// blackhole both directions, cut one direction, delay bytes (mean ± jitter), or drop every open
// connection. This kernel has no netem; the campaign puts one FaultProxy on every instance↔node
// link instead.
//
// Faults apply to bytes read after the call (bytes already queued for delay still go out).
// Blackholed or cut bytes are read and thrown away, so the sender sees a healthy socket and a
// silent peer — a partition, not a refused connection. Every connection keeps its order.
//
// Thread safety: every public member may be called from any thread. One relay thread per proxy,
// joined by the destructor, which never throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace fencelock::faults {

struct LinkFault {
  bool drop_to_node = false;    // requests vanish
  bool drop_to_client = false;  // answers vanish
  std::chrono::milliseconds delay{0};
  std::chrono::milliseconds jitter{0};  // delay ± jitter, at least 0

  static LinkFault healthy() { return {}; }
  static LinkFault blackhole() { return {true, true, {}, {}}; }
};

class FaultProxy {
 public:
  // Listens on a free loopback port and relays to 127.0.0.1:target. Throws std::runtime_error.
  FaultProxy(std::uint16_t target, std::uint64_t seed);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  void set_fault(const LinkFault& fault);
  void heal() { set_fault(LinkFault::healthy()); }
  // Closes every open connection at once (both sides see a reset or EOF); new ones are accepted.
  void drop_connections();

 private:
  using Clock = std::chrono::steady_clock;
  struct Chunk {
    Clock::time_point due;
    std::string bytes;
  };
  struct Link {
    int client = -1;
    int node = -1;
    std::deque<Chunk> to_node;
    std::deque<Chunk> to_client;
  };
  void run();
  bool pump(Link& link, bool from_client, const LinkFault& fault);
  static bool flush(std::deque<Chunk>& queue, int to, Clock::time_point now);
  Clock::duration delay(const LinkFault& fault);

  std::uint16_t target_;
  int listener_ = -1;
  int wake_[2] = {-1, -1};
  std::uint16_t port_ = 0;
  std::vector<Link> links_;  // relay thread only
  std::mt19937_64 random_;   // relay thread only

  std::mutex mutex_;
  LinkFault fault_;
  bool drop_requested_ = false;
  bool stopping_ = false;
  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace fencelock::faults
