#include "fencelock/host_port.h"

#include <catch2/catch.hpp>
#include <string>

using fencelock::parse_address;
using fencelock::parse_host_port;

const std::string kLabel63(63, 'a');

TEST_CASE("addresses are HOST:PORT or [IPV6]:PORT with an IP address or a DNS name", "[protocol]") {
  CHECK(parse_address("127.0.0.1:6379")->to_string() == "127.0.0.1:6379");
  CHECK(parse_address("[::1]:7000")->host == "::1");
  CHECK(parse_address("[::1]:7000")->to_string() == "[::1]:7000");
  CHECK(parse_address("localhost:7000")->host == "localhost");
  CHECK(parse_address("Redis-0.Redis.NS.svc:6379")->to_string() == "redis-0.redis.ns.svc:6379");
  CHECK(parse_address("redis1.:6379")->host == "redis1.");
  CHECK(parse_address("redis1.:6379")->tls_name() == "redis1");
  CHECK(parse_address("3com.example:1")->host == "3com.example");
  CHECK(parse_address(kLabel63 + "." + kLabel63 + "." + kLabel63 + ".b:1").ok());
  const auto [text, problem] = GENERATE(table<std::string, std::string>({
      {"127.0.0.1", "expected HOST:PORT"},
      {"::1:7000", "write IPv6 addresses as [IPV6]:PORT"},
      {"[::1]7000", "expected [IPV6]:PORT"},
      {"redis:0", "port must be 1..65535"},
      {"127.0.0.1:65536", "port must be 1..65535"},
      {"127.0.0.1:80x", "port must be 1..65535"},
      {":6379", "host must be an IP address or a DNS name"},
      {"[redis]:6379", "host must be an IP address or a DNS name"},
      {"-redis:6379", "host must be an IP address or a DNS name"},
      {"redis-:6379", "host must be an IP address or a DNS name"},
      {"re..dis:6379", "host must be an IP address or a DNS name"},
      {"redis_1:6379", "host must be an IP address or a DNS name"},
      {"redis..:6379", "host must be an IP address or a DNS name"},
      {"127.1:6379", "host must be an IP address or a DNS name"},
      {"10.0.0.300:6379", "host must be an IP address or a DNS name"},
      {std::string(64, 'a') + ".b:1", "host must be an IP address or a DNS name"},
      {kLabel63 + "." + kLabel63 + "." + kLabel63 + "." + kLabel63 + ":1",
       "host must be an IP address or a DNS name"},
  }));
  INFO(text);
  const auto parsed = parse_address(text);
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.error() == problem);
}

TEST_CASE("an address tells whether it needs resolving and compares as text", "[protocol]") {
  CHECK(parse_address("127.0.0.1:1")->is_literal());
  CHECK(parse_address("[fe80::1]:1")->is_literal());
  CHECK_FALSE(parse_address("localhost:1")->is_literal());
  CHECK(parse_address("Redis1.:6379")->same_text(*parse_address("redis1:6379")));
  CHECK_FALSE(parse_address("redis1:6379")->same_text(*parse_address("redis1:6380")));
  CHECK_FALSE(parse_address("localhost:6379")->same_text(*parse_address("127.0.0.1:6379")));
}

TEST_CASE("the numeric form takes IP addresses, and localhost as 127.0.0.1", "[protocol]") {
  CHECK(parse_host_port("127.0.0.1:6379")->to_string() == "127.0.0.1:6379");
  CHECK(parse_host_port("localhost:7000")->host == "127.0.0.1");
  CHECK(parse_host_port("LOCALHOST.:7000")->host == "127.0.0.1");
  CHECK(parse_host_port("[::1]:7000")->to_string() == "[::1]:7000");
  const auto [text, problem] = GENERATE(table<std::string, std::string>({
      {"127.0.0.1", "expected HOST:PORT"},
      {"127.0.0.1:0", "port must be 1..65535"},
      {"redis.internal:6379", "host must be a numeric IP address or localhost"},
      {"redis_1:6379", "host must be a numeric IP address or localhost"},
      {":6379", "host must be a numeric IP address or localhost"},
  }));
  INFO(text);
  const auto parsed = parse_host_port(text);
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.error() == problem);
}
