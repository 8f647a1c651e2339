// A complete fencelock deployment for a test: five real redis-servers, a SQLite token file and
// the real fencelockd, ready (/readyz 200) when constructed, all stopped when destroyed.
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fencelockd_process.h"
#include "http_client.h"
#include "redis_cluster.h"
#include "temp_dir.h"

namespace fencelock::testing {

inline std::string join_addresses(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

struct ServiceUnderTest {
  RedisCluster cluster{5};
  TempDir dir;
  std::optional<Fencelockd> daemon;

  explicit ServiceUnderTest(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--redis", join_addresses(cluster.addresses()), "--tokens",
                                     "sqlite:" + (dir.path() / "tokens.db").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    daemon.emplace(dir.path(), args);
    wait_ready();
  }
  std::uint16_t port() const { return daemon->port(); }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(daemon->port()); }
  HttpClient client() { return HttpClient(daemon->port()); }
  void wait_ready(unsigned expected = 200) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (client().get("/readyz").status != expected) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("readyz never answered " + std::to_string(expected) + ":\n" +
                                 daemon->log());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
};

}  // namespace fencelock::testing
