// The exchange recorder's parsing of raw requests (tests/support/api_recorder.h).
#include "api_recorder.h"

#include <catch2/catch.hpp>

using fencelock::testing::request_line_of;

TEST_CASE("the recorder names a raw request by its first line, or not at all", "[support]") {
  using Line = std::pair<std::string, std::string>;
  const auto [bytes, line] = GENERATE(table<std::string, Line>({
      {"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", {"GET", "/healthz"}},
      {"POST http://h:1/v1/locks/a HTTP/1.1\r\n", {"POST", "http://h:1/v1/locks/a"}},
      {"HEAD /v1/locks/a?x=1 HTTP/1.0\n", {"HEAD", "/v1/locks/a?x=1"}},
      {"GET /healthz\r\n", {"", ""}},
      {" /healthz HTTP/1.1\r\n", {"", ""}},
      {"GET  HTTP/1.1\r\n", {"", ""}},
      {std::string(64, '\x01'), {"", ""}},
      {"", {"", ""}},
  }));
  CHECK(request_line_of(bytes) == line);
}
