// One real redis-server process owned by a test: started on a free loopback port in a private
// directory, killed, restarted, paused and resumed on demand, and always stopped (SIGKILL, reaped)
// when the RedisServer is destroyed — also when the test fails or throws. If the test process
// itself dies, the kernel kills the server too (PR_SET_DEATHSIG), so none outlives a crash.
//
// Not thread-safe: drive one RedisServer from one thread (the one that started it: the death
// signal is tied to the thread that forked).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "child_process.h"

namespace fencelock::testing {

enum class Persistence {
  kNone,         // no AOF, no RDB: a restart loses everything
  kAofAlways,    // appendonly yes, appendfsync always: acknowledged writes survive kill -9
  kAofEverySec,  // appendonly yes, appendfsync everysec: the last ~1 s may be lost
};

class RedisServer {
 public:
  // Prepares (does not start) a server whose files live under `dir` (created if needed).
  RedisServer(std::filesystem::path dir, Persistence persistence);
  ~RedisServer();  // SIGKILL + reap if running; never throws
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Starts the process and waits until it answers PING (up to ~10 s). The first start picks a
  // free port; later starts reuse it, so clients can reconnect. Throws std::runtime_error with the
  // server's log tail if it does not come up.
  void start();

  // Two halves of start(), so a cluster can launch all servers before waiting for any.
  void spawn();
  void wait_ready();

  // "NAME=value" entries added to the server's environment from its next start on (e.g. an
  // LD_PRELOAD clock shim, tests/faults/clock_shim.cpp).
  void set_environment(std::vector<std::string> env) { env_ = std::move(env); }
  // The loopback addresses the server listens on from its next start (default: 127.0.0.1 only):
  // several for one server reachable under several addresses, or 127.0.0.2 for one that moved.
  // The first is the one address() names and start() waits on. Not empty.
  void set_bind_hosts(std::vector<std::string> hosts) { bind_hosts_ = std::move(hosts); }
  // The port of the next start, before the first one (default: a free one): a second server on
  // another bind host with the port of the first, where a node "moved" to.
  void set_port(std::uint16_t port) { port_ = port; }
  // The persistence of the next start (a node whose operator changed its config across a restart).
  void set_persistence(Persistence persistence) { persistence_ = persistence; }

  void kill();                   // SIGKILL and reap. No-op when not running.
  void restart(bool keep_data);  // kill(), optionally wipe the data directory, start()
  void pause();                  // SIGSTOP: the port stays open, nothing is answered
  void resume();                 // SIGCONT

  bool running() const noexcept { return process_.running(); }
  bool paused() const noexcept { return paused_; }
  pid_t pid() const noexcept { return process_.pid(); }
  std::uint16_t port() const noexcept { return port_; }
  std::string address() const;  // "127.0.0.1:<port>" (the first bind host)
  const std::filesystem::path& data_dir() const noexcept { return data_dir_; }
  std::string log_tail(std::size_t max_bytes = 2000) const;

 private:
  std::filesystem::path dir_;
  std::filesystem::path data_dir_;
  Persistence persistence_;
  std::uint16_t port_ = 0;
  ChildProcess process_;
  std::vector<std::string> env_;
  std::vector<std::string> bind_hosts_{"127.0.0.1"};
  bool paused_ = false;
};

// Path of the redis-server binary: $FENCELOCK_REDIS_SERVER, else "redis-server" from PATH.
std::string redis_server_binary();

// A loopback TCP port that was free a moment ago (bind to port 0, read it, close), never the
// same one twice in one process.
std::uint16_t pick_free_port();
// The raw probe behind it: may repeat.
std::uint16_t ephemeral_port();

}  // namespace fencelock::testing
