#include "lease_codec.h"

#include <catch2/catch.hpp>

using namespace fencelock::service;

TEST_CASE("a lease string carries the token and the secret and decodes back", "[service]") {
  const std::string secret = "0123456789abcdef0123456789abcdef";
  const std::string lease = encode_lease(42, secret);
  CHECK(lease == "42." + secret);
  const auto decoded = decode_lease(lease);
  REQUIRE(decoded.has_value());
  CHECK(decoded->token == 42);
  CHECK(decoded->secret == secret);
  CHECK(decode_lease(encode_lease(18446744073709551615ull, secret))->token == 18446744073709551615ull);
}

TEST_CASE("anything else is not a lease", "[service]") {
  const std::string secret = "0123456789abcdef0123456789abcdef";
  const std::string text = GENERATE_COPY(as<std::string>{}, "", secret, "." + secret, "0." + secret,
                                         "042." + secret, "-1." + secret, "1.5." + secret, "x." + secret,
                                         "18446744073709551616." + secret, "1." + secret + "0", "1.",
                                         "1." + std::string(32, 'g'), "1 ." + secret);
  CHECK_FALSE(decode_lease(text).has_value());
}
