// fencelockd with its lock nodes and token master given by DNS name, through the real resolver
// (localhost), and with one server listed under two addresses.
#include <catch2/catch.hpp>
#include <thread>

#include "fencelockd_process.h"
#include "http_client.h"
#include "redis_cluster.h"
#include "temp_dir.h"

using namespace fencelock::testing;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

std::string localhost(const RedisServer& server) {
  return "localhost:" + std::to_string(server.port());
}

// Waits until /readyz answers `expected`; throws with the daemon's log after 10 s.
json wait_ready(Fencelockd& daemon, unsigned expected) {
  HttpClient http(daemon.port());
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    const HttpAnswer answer = http.get("/readyz");
    if (answer.status == expected) return answer.json();
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("readyz never answered " + std::to_string(expected) + ":\n" +
                               daemon.log());
    std::this_thread::sleep_for(10ms);
  }
}

}  // namespace

TEST_CASE("http: fencelockd takes its lock nodes and token master by DNS name",
          "[service][redis]") {
  RedisCluster nodes(3);
  RedisCluster master(1, Persistence::kAofAlways);
  TempDir dir;
  Fencelockd daemon(dir.path(), {"--redis",
                                 localhost(nodes.node(0)) + "," + localhost(nodes.node(1)) + "," +
                                     localhost(nodes.node(2)),
                                 "--tokens", "redis://" + localhost(master.node(0)),
                                 "--token-epoch-file", (dir.path() / "epoch").string()});
  const json ready = wait_ready(daemon, 200);
  CHECK(ready["lock_nodes"]["voting"] == 3);
  CHECK(ready["lock_nodes"]["unresolved"] == 0);
  HttpClient http(daemon.port());
  const HttpAnswer granted = http.post("/v1/locks/by-name", {{"ttl_ms", 5000}});
  CHECK(granted.status == 200);
  CHECK(granted.json()["token"].get<std::uint64_t>() > 0);
  // Logs and metrics name the node as configured.
  CHECK(daemon.log_shows("lock_node_up node=" + localhost(nodes.node(0))));
  CHECK_THAT(http.get("/metrics").body,
             Catch::Contains("fencelock_node_up{node=\"" + localhost(nodes.node(1)) + "\"} 1"));
}

TEST_CASE("http: a lock node listed under two addresses is refused and votes once",
          "[service][redis]") {
  RedisCluster nodes(2);
  TempDir dir;
  Fencelockd daemon(dir.path(), {"--redis",
                                 nodes.addresses()[0] + "," + localhost(nodes.node(0)) + "," +
                                     nodes.addresses()[1],
                                 "--tokens", "sqlite:" + (dir.path() / "tokens.db").string()});
  CHECK(daemon.log_shows("two addresses of one server"));
  std::this_thread::sleep_for(300ms);
  const json ready = HttpClient(daemon.port()).get("/readyz").json();
  CHECK(ready["lock_nodes"]["voting"].get<int>() <= 2);
}
