// A refused acquire says when to try again (retry_after_ms) from its own attempt's answers: the
// lock nodes see no second broadcast (the inspect scripts) after it — for a lock with a wait, a
// lock set and a semaphore permit; a lock without wait (the plain SET, which answers no ttl) asks
// only the nodes that refused it, once each. Real redis-servers and fencelockd; MONITOR on every
// node records each command it runs.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "engine/lua_scripts.h"
#include "http_client.h"
#include "service_under_test.h"
#include "sync_redis.h"

using namespace fencelock::testing;
using nlohmann::json;

namespace {

// Every command one node runs from construction until stop(), as MONITOR reports them.
class NodeMonitor {
 public:
  explicit NodeMonitor(std::uint16_t port) : port_(port), monitor_(port) {
    REQUIRE(monitor_.command({"MONITOR"}).text == "OK");
  }

  // The commands seen up to now: ends the recording with a marker command and reads up to it
  // (at most 100,000 lines, each within the client's 1 s timeout).
  std::vector<std::string> stop() {
    const std::string marker = "fencelock-test-monitor-end";
    SyncRedis(port_).command({"ECHO", marker});
    std::vector<std::string> lines;
    for (int i = 0; i < 100'000; ++i) {
      const SyncReply line = monitor_.receive();
      if (!line.answered() || line.text.find(marker) != std::string::npos) break;
      lines.push_back(line.text);
    }
    return lines;
  }

 private:
  std::uint16_t port_;
  SyncRedis monitor_;
};

std::size_t count_containing(const std::vector<std::string>& lines, std::string_view what) {
  std::size_t count = 0;
  for (const auto& line : lines) {
    if (line.find(what) != std::string::npos) ++count;
  }
  return count;
}

}  // namespace

TEST_CASE("http: a refused acquire answers retry_after_ms without asking the nodes again",
          "[service][redis]") {
  ServiceUnderTest s;
  HttpClient http = s.client();
  REQUIRE(http.post("/v1/locks/held", {{"ttl_ms", 10000}}).status == 200);
  REQUIRE(http.post("/v1/semaphores/pool", {{"permits", 1}, {"ttl_ms", 10000}}).status == 200);

  std::vector<std::unique_ptr<NodeMonitor>> monitors;
  for (std::size_t i = 0; i < s.cluster.size(); ++i)
    monitors.push_back(std::make_unique<NodeMonitor>(s.cluster.node(i).port()));

  HttpAnswer refused;
  SECTION("a lock, without wait") {
    refused = http.post("/v1/locks/held", {{"ttl_ms", 1000}});
  }
  SECTION("a lock, after waiting") {
    refused = http.post("/v1/locks/held", {{"ttl_ms", 1000}, {"wait_ms", 50}});
  }
  SECTION("a lock set with a held name") {
    refused = http.post("/v1/locks", {{"names", {"free", "held"}}, {"ttl_ms", 1000}});
  }
  SECTION("a permit of a semaphore whose permits are all held") {
    refused = http.post("/v1/semaphores/pool", {{"permits", 1}, {"ttl_ms", 1000}});
  }
  CHECK(refused.status == 409);
  CHECK(refused.error_code() == "locked");
  const json retry_after = refused.json()["error"]["retry_after_ms"];
  REQUIRE(retry_after.is_number_integer());
  // The holder's remaining ttl, plus 1 ms (expiry_wait.h).
  CHECK(retry_after.get<long>() > 9000);
  CHECK(retry_after.get<long>() <= 10001);

  std::size_t expiry_reads = 0;
  for (std::size_t i = 0; i < monitors.size(); ++i) {
    const std::vector<std::string> lines = monitors[i]->stop();
    INFO("node " << i << ":\n"
                 << [&] {
                      std::string all;
                      for (const auto& line : lines) all += line + "\n";
                      return all;
                    }());
    const std::size_t reads = count_containing(lines, fencelock::storage::kInspectScriptSha);
    CHECK(reads <= 1);
    expiry_reads += reads;
    CHECK(count_containing(lines, fencelock::storage::kInspectSemaphoreScriptSha) == 0);
  }
  // Every acquire script answers the holder and its ttl itself: no read follows a refusal that a
  // quorum of answers explains.
  CHECK(expiry_reads == 0);
}
