#include "fencelock/storage/lease_secret.h"

#include <catch2/catch.hpp>
#include <set>

using namespace fencelock::storage;

TEST_CASE("a lease value is a 64-bit id and a 128-bit secret, 48 random lower-case hex digits",
          "[storage]") {
  const auto value = generate_lease_value();
  REQUIRE(value.ok());
  CHECK(value.value().size() == 48);
  CHECK(value.value().find_first_not_of("0123456789abcdef") == std::string::npos);
}

TEST_CASE("lease values do not repeat", "[storage]") {
  std::set<std::string> seen;
  for (int i = 0; i < 10'000; ++i) {
    auto value = generate_lease_value();
    REQUIRE(value.ok());
    CHECK(seen.insert(std::move(value).value()).second);
  }
}

TEST_CASE("a proof is the lease id and the first half of SHA-1 of token and value", "[storage]") {
  const std::string value = "00112233445566778899aabbccddeeff0123456789abcdef";
  // sha1("17:00112233445566778899aabbccddeeff0123456789abcdef"), as Redis's sha1hex computes it.
  CHECK(lease_proof(value, 17) ==
        "0011223344556677"
        "ae7158f9b1e8f9058e9133d069bae537");
  CHECK(lease_proof(value, 18) != lease_proof(value, 17));
  CHECK(is_well_formed_lease_proof(lease_proof(value, 17)));
}

TEST_CASE("only the proof's shape is a well-formed lease proof", "[storage]") {
  const auto [text, ok] = GENERATE(table<std::string, bool>({
      {"0123456789abcdef0123456789abcdef0123456789abcdef", true},
      {"0123456789ABCDEF0123456789abcdef0123456789abcdef", false},   // upper case
      {"0123456789abcdef0123456789abcdef0123456789abcde", false},    // too short
      {"0123456789abcdef0123456789abcdef0123456789abcdef0", false},  // too long
      {"0123456789abcdef0123456789abcdef0123456789abcdeg", false},   // not hex
      {"0123456789abcdef0123456789abcdef", false},                   // an old 32-digit secret
      {"", false},
  }));
  CHECK(is_well_formed_lease_proof(text) == ok);
}
