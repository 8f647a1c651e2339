#include "redis_server.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "sync_redis.h"

namespace fencelock::testing {

namespace {

constexpr int kStartAttempts = 5;  // a port picked free can be taken by a parallel test
constexpr auto kReadyTimeout = std::chrono::seconds(10);

std::vector<std::string> server_arguments(std::uint16_t port, const std::filesystem::path& data_dir,
                                          const std::filesystem::path& log, Persistence persistence,
                                          const std::vector<std::string>& bind_hosts) {
  std::vector<std::string> args = {redis_server_binary(),
                                   "--port",
                                   std::to_string(port),
                                   "--bind",
                                   "--dir",
                                   data_dir.string(),
                                   "--logfile",
                                   log.string(),
                                   "--daemonize",
                                   "no",
                                   "--save",
                                   "",
                                   "--protected-mode",
                                   "no",
                                   "--enable-debug-command",
                                   "local",
                                   "--databases",
                                   "1"};
  const auto bind = std::find(args.begin(), args.end(), "--bind");
  args.insert(bind + 1, bind_hosts.begin(), bind_hosts.end());
  switch (persistence) {
    case Persistence::kNone:
      args.insert(args.end(), {"--appendonly", "no"});
      break;
    case Persistence::kAofAlways:
      args.insert(args.end(), {"--appendonly", "yes", "--appendfsync", "always"});
      break;
    case Persistence::kAofEverySec:
      args.insert(args.end(), {"--appendonly", "yes", "--appendfsync", "everysec"});
      break;
  }
  return args;
}

}  // namespace

std::string redis_server_binary() {
  const char* configured = std::getenv("FENCELOCK_REDIS_SERVER");
  return configured != nullptr && *configured != '\0' ? configured : "redis-server";
}

std::uint16_t pick_free_port() {
  // The kernel may offer a just-released port again before its first taker has bound it, so a
  // port is never handed out twice by one test process.
  static std::mutex mutex;
  static std::set<std::uint16_t> handed_out;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::uint16_t port = ephemeral_port();
    std::lock_guard<std::mutex> lock(mutex);
    if (handed_out.insert(port).second) return port;
  }
  throw std::runtime_error("no unused loopback port found");
}

std::uint16_t ephemeral_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw std::runtime_error("cannot find a free port: " + why);
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

RedisServer::RedisServer(std::filesystem::path dir, Persistence persistence)
    : dir_(std::move(dir)), data_dir_(dir_ / "data"), persistence_(persistence) {
  std::filesystem::create_directories(data_dir_);
}

RedisServer::~RedisServer() {
  try {
    kill();
  } catch (...) {  // a destructor never throws; the death signal still covers us
  }
}

std::string RedisServer::address() const {
  return bind_hosts_.front() + ":" + std::to_string(port_);
}

std::string RedisServer::log_tail(std::size_t max_bytes) const {
  std::ifstream in(dir_ / "redis.log");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > max_bytes ? text.substr(text.size() - max_bytes) : text;
}

void RedisServer::spawn() {
  if (running()) return;
  if (port_ == 0) port_ = pick_free_port();
  process_.start(server_arguments(port_, data_dir_, dir_ / "redis.log", persistence_, bind_hosts_),
                 dir_ / "console.log", env_);
  paused_ = false;
}

void RedisServer::wait_ready() {
  const auto deadline = std::chrono::steady_clock::now() + kReadyTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (process_.poll_exit()) {
      throw std::runtime_error("redis-server on port " + std::to_string(port_) +
                               " exited at start:\n" + log_tail());
    }
    // Ready when *our* process answers: another server on a reused port would answer PING too.
    SyncRedis probe(bind_hosts_.front(), port_, std::chrono::milliseconds(200));
    if (probe.ping() && probe.info_field("server", "process_id") == std::to_string(pid())) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill();
  throw std::runtime_error("redis-server on port " + std::to_string(port_) +
                           " did not answer PING within 10 s:\n" + log_tail());
}

void RedisServer::start() {
  for (int attempt = 1;; ++attempt) {
    spawn();
    try {
      wait_ready();
      return;
    } catch (const std::runtime_error&) {
      const bool port_taken = log_tail().find("Address already in use") != std::string::npos;
      if (!port_taken || attempt == kStartAttempts) throw;
      port_ = 0;  // somebody else took it between pick_free_port() and bind(): pick again
    }
  }
}

void RedisServer::kill() {
  process_.kill();
  paused_ = false;
}

void RedisServer::restart(bool keep_data) {
  kill();
  if (!keep_data) {
    std::filesystem::remove_all(data_dir_);
    std::filesystem::create_directories(data_dir_);
  }
  start();
}

void RedisServer::pause() {
  if (!running() || paused_) return;
  process_.signal(SIGSTOP);
  paused_ = true;
}

void RedisServer::resume() {
  if (!running() || !paused_) return;
  process_.signal(SIGCONT);
  paused_ = false;
}

}  // namespace fencelock::testing
