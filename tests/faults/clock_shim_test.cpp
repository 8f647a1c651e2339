// The clock shim of the fault campaign against a real redis-server: a forward jump of one node's
// wall clock expires its keys early, and TIME moves with it; the host's clock does not.
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <thread>

#include "build_paths.h"
#include "redis_server.h"
#include "sync_redis.h"
#include "temp_dir.h"

using namespace fencelock::testing;
using namespace std::chrono_literals;

namespace {

void write_clock(const std::filesystem::path& file, const std::string& line) {
  std::ofstream(file, std::ios::trunc) << line << '\n';
}

std::int64_t redis_seconds(SyncRedis& redis) {
  return std::stoll(redis.command({"TIME"}).elements.at(0).text);
}

}  // namespace

TEST_CASE("faults: a forward clock jump on one node expires its keys at once and moves its TIME",
          "[faults][redis]") {
  TempDir dir;
  const auto clock = dir.path() / "clock";
  write_clock(clock, "0");
  RedisServer server(dir.path() / "node", Persistence::kNone);
  server.set_environment({std::string("LD_PRELOAD=") + clock_shim_library(),
                          "FENCELOCK_CLOCK_FILE=" + clock.string()});
  server.start();
  SyncRedis redis(server.port());
  REQUIRE(redis.command({"SET", "k", "v", "PX", "20000"}).text == "OK");
  const std::int64_t before = redis_seconds(redis);

  write_clock(clock, "30000");
  std::this_thread::sleep_for(50ms);  // the shim re-reads the file every 10 ms
  CHECK_FALSE(redis.get("k").has_value());
  CHECK(redis_seconds(redis) - before >= 29);

  SECTION("a drifting clock runs fast, a key's ttl with it") {
    write_clock(clock, "30000 500000");  // +50 %
    std::this_thread::sleep_for(50ms);
    REQUIRE(redis.command({"SET", "d", "v", "PX", "3000"}).text == "OK");
    std::this_thread::sleep_for(2200ms);  // 3.3 s by the node's clock
    CHECK_FALSE(redis.get("d").has_value());
  }
}
