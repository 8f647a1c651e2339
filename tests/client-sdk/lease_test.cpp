// Lease (lease.h): the three kinds, their tokens, and rebuilding a lease from its string.
#include "fencelock/lease.h"

#include <catch2/catch.hpp>

using namespace fencelock;
using namespace std::chrono_literals;

namespace {
const std::string kProof = "4f1c0e9a2b7d4c6e8f0a1b2c3d4e5f6071c2d9e04b3a8f156";
}  // namespace

TEST_CASE("lease: a lock set fences per name and has no single token", "[client]") {
  const auto lease =
      Lease::lock_set({"a", "b"}, {17, 4}, "17,4." + kProof, 30s, Lease::Clock::now() + 30s);
  CHECK(lease.kind() == LeaseKind::kSet);
  CHECK(lease.name() == "a,b");
  CHECK(lease.names() == std::vector<std::string>{"a", "b"});
  CHECK(lease.token_of("a") == 17);
  CHECK(lease.token_of("b") == 4);
  CHECK(lease.token_of("c") == 0);
  CHECK(lease.token() == 0);
  CHECK(lease.slot() == 0);
  CHECK(lease.permits() == 0);
}

TEST_CASE("lease: a permit has its semaphore's name, its slot and one token", "[client]") {
  const auto lease =
      Lease::permit("pool", 3, 2, "9." + kProof + ".3.2", 9, 10s, Lease::Clock::now() + 10s);
  CHECK(lease.kind() == LeaseKind::kPermit);
  CHECK(lease.name() == "pool");
  CHECK(lease.names() == std::vector<std::string>{"pool"});
  CHECK(lease.token() == 9);
  CHECK(lease.token_of("pool") == 9);
  CHECK(lease.slot() == 2);
  CHECK(lease.permits() == 3);
}

TEST_CASE("lease: a single lock is what it always was", "[client]") {
  const Lease lease("jobs", "5." + kProof, 5, 1s, Lease::Clock::now() + 1s);
  CHECK(lease.kind() == LeaseKind::kLock);
  CHECK(lease.name() == "jobs");
  CHECK(lease.token() == 5);
  CHECK(lease.token_of("jobs") == 5);
  CHECK(lease.tokens() == std::vector<std::uint64_t>{5});
}

TEST_CASE("lease: a lease string is rebuilt into the lease it came with", "[client]") {
  SECTION("a lock") {
    auto lease = lease_from_string(LeaseKind::kLock, {"jobs"}, "17." + kProof, 30s);
    REQUIRE(lease.ok());
    CHECK(lease->token() == 17);
    CHECK(lease->lease_string() == "17." + kProof);
    CHECK(lease->ttl() == 30s);
  }
  SECTION("a lock set, its names in any order, paired with the tokens in sorted order") {
    auto lease = lease_from_string(LeaseKind::kSet, {"b", "a", "c"}, "17,4,9." + kProof, 30s);
    REQUIRE(lease.ok());
    CHECK(lease->names() == std::vector<std::string>{"a", "b", "c"});
    CHECK(lease->token_of("a") == 17);
    CHECK(lease->token_of("b") == 4);
    CHECK(lease->token_of("c") == 9);
  }
  SECTION("a permit, its permits and slot read from the string") {
    auto lease = lease_from_string(LeaseKind::kPermit, {"pool"}, "9." + kProof + ".3.0", 30s);
    REQUIRE(lease.ok());
    CHECK(lease->token() == 9);
    CHECK(lease->permits() == 3);
    CHECK(lease->slot() == 0);
  }
}

TEST_CASE("lease: a malformed lease string or bad names are refused", "[client]") {
  using Names = std::vector<std::string>;
  const auto [kind, names, text] = GENERATE_COPY(table<LeaseKind, Names, std::string>({
      {LeaseKind::kLock, Names{"jobs"}, "17"},
      {LeaseKind::kLock, Names{"jobs"}, "017." + kProof},
      {LeaseKind::kLock, Names{"jobs"}, "0." + kProof},
      {LeaseKind::kLock, Names{"jobs"}, "x." + kProof},
      {LeaseKind::kLock, Names{"jobs"}, "17.xyz"},
      {LeaseKind::kLock, Names{"jobs"}, "17."},
      {LeaseKind::kLock, Names{"jobs"}, "17,4." + kProof},
      {LeaseKind::kLock, Names{"a", "b"}, "17." + kProof},
      {LeaseKind::kLock, Names{"bad name"}, "17." + kProof},
      {LeaseKind::kSet, Names{"a", "b"}, "17." + kProof},
      {LeaseKind::kSet, Names{"a", "b"}, "17,,4." + kProof},
      {LeaseKind::kSet, Names{"a", "a"}, "17,4." + kProof},
      {LeaseKind::kSet, Names{}, "17." + kProof},
      {LeaseKind::kPermit, Names{"pool"}, "9." + kProof},
      {LeaseKind::kPermit, Names{"pool"}, "9." + kProof + ".3.3"},
      {LeaseKind::kPermit, Names{"pool"}, "9." + kProof + ".0.0"},
      {LeaseKind::kPermit, Names{"pool"}, "9." + kProof + ".65.1"},
      {LeaseKind::kPermit, Names{"pool"}, "9." + kProof + ".3.01"},
      {LeaseKind::kPermit, Names{"pool"}, "9." + kProof + ".3.-1"},
  }));
  INFO(text);
  auto lease = lease_from_string(kind, names, text, 1s);
  REQUIRE_FALSE(lease.ok());
  CHECK(lease.error().code == ErrorCode::kInvalidArgument);
}

TEST_CASE("lease: a lock set of more than 16 names cannot be rebuilt", "[client]") {
  std::vector<std::string> names;
  std::string tokens;
  for (int i = 0; i < 17; ++i) {
    names.push_back("n" + std::to_string(i));
    tokens += (i > 0 ? "," : "") + std::to_string(i + 1);
  }
  CHECK_FALSE(lease_from_string(LeaseKind::kSet, names, tokens + "." + kProof, 1s).ok());
  names.pop_back();
  tokens = tokens.substr(0, tokens.rfind(','));
  CHECK(lease_from_string(LeaseKind::kSet, names, tokens + "." + kProof, 1s).ok());
}
