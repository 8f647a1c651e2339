#include "fencelock/storage/lease_secret.h"

#include <catch2/catch.hpp>
#include <set>

using namespace fencelock::storage;

TEST_CASE("a lease secret is 128 random bits written as 32 lower-case hex digits", "[storage]") {
  const auto secret = generate_lease_secret();
  REQUIRE(secret.ok());
  CHECK(secret.value().size() == 32);
  CHECK(is_well_formed_lease_secret(secret.value()));
}

TEST_CASE("lease secrets do not repeat", "[storage]") {
  std::set<std::string> seen;
  for (int i = 0; i < 10'000; ++i) {
    auto secret = generate_lease_secret();
    REQUIRE(secret.ok());
    CHECK(seen.insert(std::move(secret).value()).second);
  }
}

TEST_CASE("only the generator's shape is a well-formed lease secret", "[storage]") {
  const auto [text, ok] = GENERATE(table<std::string, bool>({
      {"0123456789abcdef0123456789abcdef", true},
      {"0123456789ABCDEF0123456789abcdef", false},  // upper case
      {"0123456789abcdef0123456789abcde", false},   // too short
      {"0123456789abcdef0123456789abcdef0", false}, // too long
      {"0123456789abcdef0123456789abcdeg", false},  // not hex
      {"", false},
  }));
  CHECK(is_well_formed_lease_secret(text) == ok);
}
