#include "api/answer_json.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

using namespace fencelock::service;
using namespace std::chrono_literals;
using nlohmann::json;

TEST_CASE("a lease answer written by hand is what nlohmann's dump() wrote, byte for byte",
          "[service]") {
  const std::string name =
      GENERATE(as<std::string>{}, "orders", "a.b:c-d_e", std::string(200, 'n'), "say \"hi\"",
               "back\\slash", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92", "tab\tnew\nline\r",
               std::string("nul\0and\x01\x1f\x7f", 10), "\b\f/");
  INFO(name);
  const std::string lease = "18446744073709551615.0123456789abcdef0123456789abcdef";
  const json before{{"name", name},
                    {"lease", lease},
                    {"token", std::uint64_t{18446744073709551615ULL}},
                    {"ttl_ms", std::int64_t{30000}},
                    {"validity_ms", std::int64_t{-2}}};
  CHECK(lease_answer_json(name, lease, 18446744073709551615ULL, 30000ms, -2ms) == before.dump());
  json granted = before;
  granted["waited_ms"] = std::int64_t{0};
  CHECK(lease_answer_json(name, lease, 18446744073709551615ULL, 30000ms, -2ms, 0ms) ==
        granted.dump());
  CHECK(released_answer_json(name, true) == json{{"name", name}, {"released", true}}.dump());
  CHECK(released_answer_json(name, false) == json{{"name", name}, {"released", false}}.dump());
  const json parsed = json::parse(lease_answer_json(name, lease, 7, 1ms, 1ms, 5ms));
  CHECK(parsed["name"] == name);
  CHECK(parsed["lease"] == lease);
  CHECK(parsed["waited_ms"] == 5);
}

TEST_CASE("text that is not UTF-8 is refused as nlohmann's dump() refused it", "[service]") {
  const std::string bad = "bad \xff\xfe";
  CHECK_THROWS_AS(json(bad).dump(), json::type_error);
  CHECK_THROWS_AS(released_answer_json(bad, true), json::type_error);
  std::string out;
  append_json_string(out, "");
  CHECK(out == "\"\"");
}

TEST_CASE("an answer of JSON text is a 200 carrying its token for the log", "[service]") {
  const ApiResponse answer = ok_json_text(R"({"a":1})", 42);
  CHECK(answer.status == 200);
  CHECK(answer.body == R"({"a":1})");
  CHECK(answer.log.token == std::optional<std::uint64_t>(42));
  CHECK(answer.content_type == "application/json");
}
