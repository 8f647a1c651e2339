// FenceRetries (engine/fences.h): when an acquire or a token draw refused by fences draws again.
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "engine/fences.h"

using fencelock::storage::FenceRetries;
using fencelock::storage::kFenceRaces;
using fencelock::storage::kFenceRetries;

namespace {
using Tokens = std::vector<std::uint64_t>;
}

TEST_CASE("fence retries: only fresh tokens still behind a fence seen before count as behind",
          "[storage]") {
  FenceRetries retries;
  // The first refusal: nothing was seen before, so the token is not behind anything yet.
  CHECK(retries.retry_after(Tokens{5}, Tokens{10}));
  // Three fresh tokens in a row at or below 10: the store did not skip past it.
  for (std::uint32_t i = 0; i < kFenceRetries; ++i) {
    CHECK(retries.retry_after(Tokens{10}, Tokens{10}));
  }
  CHECK_FALSE(retries.retry_after(Tokens{7}, Tokens{10}));
}

TEST_CASE("fence retries: tokens above every fence seen lost races and retry up to the race bound",
          "[storage]") {
  FenceRetries retries;
  std::uint64_t token = 1;
  std::uint32_t allowed = 0;
  while (retries.retry_after(Tokens{token}, Tokens{token + 1}) && allowed <= kFenceRaces) {
    token += 2;  // above the last fence, beaten again by a concurrent grant
    ++allowed;
  }
  CHECK(allowed == kFenceRaces);
}

TEST_CASE("fence retries: another kind of failure starts the count again, per name of a set",
          "[storage]") {
  FenceRetries retries;
  CHECK(retries.retry_after(Tokens{1, 1}, Tokens{0, 20}));
  for (std::uint32_t i = 0; i < kFenceRetries; ++i) {
    CHECK(retries.retry_after(Tokens{30, 20}, Tokens{0, 20}));  // the second name is behind
  }
  retries.reset();
  CHECK(retries.retry_after(Tokens{31, 20}, Tokens{0, 20}));
}
