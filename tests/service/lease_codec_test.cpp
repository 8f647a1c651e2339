#include "lease_codec.h"

#include <catch2/catch.hpp>

using namespace fencelock::service;

namespace {
const std::string kProof = "0123456789abcdef0123456789abcdef0123456789abcdef";
}

TEST_CASE("a lease string carries the token and the proof and decodes back", "[service]") {
  const std::string lease = encode_lease(42, kProof);
  CHECK(lease == "42." + kProof);
  const auto decoded = decode_lease(lease);
  REQUIRE(decoded.has_value());
  CHECK(decoded->token == 42);
  CHECK(decoded->proof == kProof);
  CHECK(decode_lease(encode_lease(18446744073709551615ull, kProof))->token ==
        18446744073709551615ull);
}

TEST_CASE("anything else is not a lease", "[service]") {
  const std::string old_secret = "0123456789abcdef0123456789abcdef";  // the 32-digit secret of old
  const std::string text = GENERATE_COPY(
      as<std::string>{}, "", kProof, "." + kProof, "0." + kProof, "042." + kProof, "-1." + kProof,
      "1.5." + kProof, "x." + kProof, "18446744073709551616." + kProof, "1." + kProof + "0", "1.",
      "1." + std::string(48, 'g'), "1 ." + kProof, "1." + old_secret);
  CHECK_FALSE(decode_lease(text).has_value());
}
