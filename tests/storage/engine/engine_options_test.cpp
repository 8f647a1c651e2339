#include "fencelock/storage/engine_options.h"

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using namespace fencelock::storage;

TEST_CASE("node addresses are IP addresses or DNS names with a port", "[storage]") {
  SECTION("accepted") {
    CHECK(parse_node_address("127.0.0.1:6379").value().to_string() == "127.0.0.1:6379");
    CHECK(parse_node_address("localhost:7000").value().host == "localhost");
    CHECK(parse_node_address("Redis-0.redis:7000").value().to_string() == "redis-0.redis:7000");
    CHECK(parse_node_address("[::1]:7000").value().host == "::1");
    CHECK(parse_node_address("[::1]:7000").value().to_string() == "[::1]:7000");
  }
  SECTION("refused") {
    const std::string text =
        GENERATE(as<std::string>{}, "", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
                 "127.0.0.1:80x", "redis_1:6379", "::1:6379", "[::1]6379", ":6379");
    CHECK(parse_node_address(text).error().code == ErrorCode::kInvalidArgument);
  }
}

TEST_CASE("engine options are checked field by field", "[storage]") {
  EngineOptions ok;
  ok.nodes = {parse_node_address("127.0.0.1:7000").value()};
  REQUIRE(validate_engine_options(ok).ok());

  auto refused = [](EngineOptions o) { return validate_engine_options(o).error().message; };
  EngineOptions o = ok;
  SECTION("no nodes") {
    o.nodes.clear();
    CHECK_THAT(refused(o), Catch::Contains("nodes"));
  }
  SECTION("a node twice") {
    o.nodes.push_back(o.nodes[0]);
    CHECK_THAT(refused(o), Catch::Contains("twice"));
  }
  SECTION("too many nodes") {
    o.nodes.clear();
    for (int i = 0; i < 16; ++i)
      o.nodes.push_back({"127.0.0.1", static_cast<std::uint16_t>(7000 + i)});
    CHECK_THAT(refused(o), Catch::Contains("nodes"));
  }
  SECTION("node timeout") {
    o.node_timeout = 0ms;
    CHECK_THAT(refused(o), Catch::Contains("node_timeout"));
  }
  SECTION("drift") {
    o.drift_factor = 0.9;
    CHECK_THAT(refused(o), Catch::Contains("drift_factor"));
  }
  SECTION("ttl bounds") {
    o.min_ttl = 2s;
    o.max_ttl = 1s;
    CHECK_THAT(refused(o), Catch::Contains("max_ttl"));
  }
  SECTION("reconnect bounds") {
    o.reconnect_min = 5s;
    o.reconnect_max = 1s;
    CHECK_THAT(refused(o), Catch::Contains("reconnect"));
  }
  SECTION("key prefix") {
    o.key_prefix = std::string(65, 'p');
    CHECK_THAT(refused(o), Catch::Contains("key_prefix"));
  }
  // Review of 0840a92: "fencelock:#" + the name "node" is the node marker every deployment reads.
  SECTION("a key prefix with '#', which would reach the keys every deployment shares") {
    o.key_prefix = "fencelock:#";
    CHECK_THAT(refused(o), Catch::Contains("key_prefix") && Catch::Contains("'#'"));
  }
}
