#include "fencelock/host_port.h"

#include <catch2/catch.hpp>
#include <string>

using fencelock::parse_host_port;

TEST_CASE("addresses are HOST:PORT or [IPV6]:PORT with a numeric host", "[protocol]") {
  CHECK(parse_host_port("127.0.0.1:6379")->to_string() == "127.0.0.1:6379");
  CHECK(parse_host_port("localhost:7000")->host == "127.0.0.1");
  CHECK(parse_host_port("[::1]:7000")->host == "::1");
  CHECK(parse_host_port("[::1]:7000")->to_string() == "[::1]:7000");
  const auto [text, problem] = GENERATE(table<std::string, std::string>({
      {"127.0.0.1", "expected HOST:PORT"},
      {"::1:7000", "write IPv6 addresses as [IPV6]:PORT"},
      {"[::1]7000", "expected [IPV6]:PORT"},
      {"127.0.0.1:0", "port must be 1..65535"},
      {"127.0.0.1:65536", "port must be 1..65535"},
      {"127.0.0.1:80x", "port must be 1..65535"},
      {"redis.internal:6379", "host must be a numeric IP address or localhost"},
      {":6379", "host must be a numeric IP address or localhost"},
  }));
  INFO(text);
  const auto parsed = parse_host_port(text);
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.error() == problem);
}
