#include "api/lease_codec.h"

#include <catch2/catch.hpp>
#include <vector>

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

TEST_CASE("a lock set's lease carries one token per name, in order, and the proof", "[service]") {
  const std::string lease = encode_set_lease({17, 4, 18446744073709551615ull}, kProof);
  CHECK(lease == "17,4,18446744073709551615." + kProof);
  const auto decoded = decode_set_lease(lease, 3);
  REQUIRE(decoded.has_value());
  CHECK(decoded->tokens == std::vector<std::uint64_t>{17, 4, 18446744073709551615ull});
  CHECK(decoded->proof == kProof);
  CHECK(decoded->owner.empty());
  CHECK(decode_set_lease(encode_set_lease({9}, kProof), 1)->tokens ==
        std::vector<std::uint64_t>{9});
}

TEST_CASE("a lock set's lease with another token count or a bad token is not one", "[service]") {
  const auto [text, names] = GENERATE_COPY(table<std::string, std::size_t>({
      {"17,4." + kProof, 1},
      {"17,4." + kProof, 3},
      {"17,4." + kProof, 0},
      {"17,,4." + kProof, 2},
      {",17,4." + kProof, 2},
      {"17,4,." + kProof, 2},
      {"17,0." + kProof, 2},
      {"17,04." + kProof, 2},
      {"17, 4." + kProof, 2},
      {"17,-4." + kProof, 2},
      {"17,4", 2},
      {"17,4." + kProof + "0", 2},
      {"17,18446744073709551616." + kProof, 2},
  }));
  INFO(text << " for " << names << " names");
  CHECK_FALSE(decode_set_lease(text, names).has_value());
}

TEST_CASE("a permit's lease carries its token, proof, permit count and slot", "[service]") {
  const std::string lease = encode_permit_lease(17, kProof, 3, 1);
  CHECK(lease == "17." + kProof + ".3.1");
  const auto decoded = decode_permit_lease(lease);
  REQUIRE(decoded.has_value());
  CHECK(decoded->claim.token == 17);
  CHECK(decoded->claim.proof == kProof);
  CHECK(decoded->permits == 3);
  CHECK(decoded->slot == 1);
  CHECK(decode_permit_lease(encode_permit_lease(1, kProof, 64, 63))->slot == 63);
  CHECK(decode_permit_lease(encode_permit_lease(1, kProof, 1, 0))->permits == 1);
}

TEST_CASE("anything else is not a permit's lease", "[service]") {
  const std::string text =
      GENERATE_COPY(as<std::string>{}, "", "17." + kProof, "17." + kProof + ".3",
                    "17." + kProof + ".3.3", "17." + kProof + ".0.0", "17." + kProof + ".65.0",
                    "17." + kProof + ".03.1", "17." + kProof + ".3.01", "17." + kProof + ".3.-1",
                    "17." + kProof + "..1", "17." + kProof + ".3.", "0." + kProof + ".3.1",
                    "17.x.3.1", ".3.1", "17." + kProof + ".3.1.1");
  CHECK_FALSE(decode_permit_lease(text).has_value());
}
