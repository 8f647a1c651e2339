// API keys as pure logic: the auth file's rules, name patterns, the token bucket and the
// authorizer's decisions (the real service with keys is in http_auth_test.cpp).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "auth/api_keys.h"
#include "auth/api_secret.h"
#include "auth/authorizer.h"
#include "auth/key_usage.h"
#include "auth/rate_limiter.h"

using namespace fencelock::service;
using nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

json key_entry(const std::string& id, const std::string& secret, json names, json rights) {
  return json{{"id", id},
              {"secret_sha256", sha256_hex(secret)},
              {"names", std::move(names)},
              {"rights", std::move(rights)}};
}

KeySet keys_of(const json& entries) {
  auto set = KeySet::parse(json{{"keys", entries}}.dump());
  REQUIRE(set.ok());
  return std::move(set).value();
}

std::string parse_error(const std::string& text) {
  auto set = KeySet::parse(text);
  REQUIRE_FALSE(set.ok());
  return set.error().message;
}

}  // namespace

TEST_CASE("auth: SHA-256 and fresh secrets", "[service]") {
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const auto a = generate_api_secret();
  const auto b = generate_api_secret();
  REQUIRE(a.ok());
  CHECK(a->size() == 4 + 64);
  CHECK(a->rfind("flk_", 0) == 0);
  CHECK(a.value() != b.value());
}

TEST_CASE("auth: name patterns match whole names, '*' any run of characters", "[service]") {
  CHECK(name_matches("billing.*", "billing.invoice"));
  CHECK(name_matches("billing.*", "billing."));
  CHECK_FALSE(name_matches("billing.*", "billing"));
  CHECK_FALSE(name_matches("billing.*", "xbilling.a"));
  CHECK(name_matches("*", "anything"));
  CHECK(name_matches("exact", "exact"));
  CHECK_FALSE(name_matches("exact", "exact2"));
  CHECK(name_matches("a*b*c", "aXXbYYc"));
  CHECK_FALSE(name_matches("a*b*c", "aXXbYY"));
  CHECK(name_matches("*.report", "daily.report"));
  // No exponential backtracking on a hostile pattern and name.
  CHECK_FALSE(name_matches(std::string(50, '*') + "b", std::string(200, 'a')));
}

TEST_CASE("auth: rights parse from lists", "[service]") {
  CHECK(parse_rights("lock") == kRightLock);
  CHECK(parse_rights("lock,read,token") == (kRightLock | kRightRead | kRightToken));
  CHECK_FALSE(parse_rights("").has_value());
  CHECK_FALSE(parse_rights("lock,").has_value());
  CHECK(parse_rights("read,admin") == (kRightRead | kRightAdmin));
  CHECK_FALSE(parse_rights("root").has_value());
}

TEST_CASE("auth: a good file loads — every mistake is refused with the key and field",
          "[service]") {
  const KeySet set = keys_of(json::array({key_entry("billing", "s1", {"billing.*"}, {"lock"}),
                                          key_entry("ops", "s2", {"*"}, {"read", "token"})}));
  REQUIRE(set.keys().size() == 2);
  REQUIRE(set.find_by_secret_hash(sha256_hex("s2")) != nullptr);
  CHECK(set.find_by_secret_hash(sha256_hex("s2"))->id == "ops");
  CHECK(set.find_by_secret_hash(sha256_hex("nope")) == nullptr);

  CHECK_THAT(parse_error("not json"), Catch::Contains("not valid JSON"));
  CHECK_THAT(parse_error("[]"), Catch::Contains("must be a JSON object"));
  CHECK_THAT(parse_error(R"({"keys": [], "extra": 1})"), Catch::Contains("unknown field 'extra'"));
  auto one = [](json entry) { return json{{"keys", json::array({entry})}}.dump(); };
  json good = key_entry("billing", "s1", {"billing.*"}, {"lock"});
  json e = good;
  e["id"] = "bad id";
  CHECK_THAT(parse_error(one(e)), Catch::Contains("id must be"));
  e = good;
  e["secret_sha256"] = "ABC";
  CHECK_THAT(parse_error(one(e)), Catch::Contains("secret_sha256"));
  e = good;
  e["names"] = json::array({"bad name!"});
  CHECK_THAT(parse_error(one(e)), Catch::Contains("key 'billing'") && Catch::Contains("pattern"));
  e = good;
  e["rights"] = json::array({"root"});
  CHECK_THAT(parse_error(one(e)), Catch::Contains("lock, read, token, admin"));
  e = good;
  e["rate"] = -1;
  CHECK_THAT(parse_error(one(e)), Catch::Contains("rate must be"));
  e = good;
  e["burst"] = 5;
  CHECK_THAT(parse_error(one(e)), Catch::Contains("burst needs a rate"));
  e = good;
  e["secret"] = "plain";
  CHECK_THAT(parse_error(one(e)), Catch::Contains("unknown field 'secret'"));
  e = good;
  e.erase("rights");
  CHECK_THAT(parse_error(one(e)), Catch::Contains("rights is missing"));
  CHECK_THAT(parse_error(json{{"keys", json::array({good, good})}}.dump()),
             Catch::Contains("used twice"));
  json same_secret = key_entry("other", "s1", {"*"}, {"read"});
  CHECK_THAT(parse_error(json{{"keys", json::array({good, same_secret})}}.dump()),
             Catch::Contains("another key's"));
}

TEST_CASE("auth: a token bucket allows its burst, then its rate", "[service]") {
  const auto t0 = Clock::now();
  TokenBucket bucket(10, 2, t0);  // 10/s, burst 2
  CHECK_FALSE(bucket.take(t0).has_value());
  CHECK_FALSE(bucket.take(t0).has_value());
  const auto wait = bucket.take(t0);
  REQUIRE(wait.has_value());
  CHECK(*wait == 100ms);
  CHECK_FALSE(bucket.take(t0 + 100ms).has_value());  // one token back after 1/rate
  CHECK(bucket.take(t0 + 100ms).has_value());
  CHECK_FALSE(bucket.take(t0 + 10s).has_value());  // refills, capped at the burst
  CHECK_FALSE(bucket.take(t0 + 10s).has_value());
  CHECK(bucket.take(t0 + 10s).has_value());
}

TEST_CASE("auth: the authorizer's decisions", "[service]") {
  const auto now = Clock::now();
  SECTION("without keys everyone may do anything") {
    const Authorizer open;
    CHECK_FALSE(open.enabled());
    const auto d = open.check(kRightLock, "x", "", now);
    CHECK(d.allowed);
    CHECK(d.key_id.empty());
  }
  json billing = key_entry("billing", "flk_billing", {"billing.*"}, {"lock", "read"});
  billing["rate"] = 1;
  billing["burst"] = 2;
  Authorizer keys(keys_of(json::array({billing})));
  auto check = [&](std::uint8_t right, const std::string& name, const std::string& header) {
    return keys.check(right, name, header, now);
  };
  SECTION("health, readiness and metrics need no key") {
    CHECK(check(0, "", "").allowed);
  }
  SECTION("401: no header, another scheme, an unknown or oversized secret") {
    for (const std::string& header :
         {std::string(), std::string("Basic abc"), std::string("Bearer "),
          std::string("Bearer flk_other"), "Bearer " + std::string(300, 'a')}) {
      const auto d = check(kRightLock, "billing.a", header);
      CHECK_FALSE(d.allowed);
      CHECK(d.error == fencelock::WireError::kUnauthenticated);
      CHECK(d.message.find("flk_") == std::string::npos);  // a secret is never echoed
    }
  }
  SECTION("the scheme is case-insensitive") {
    CHECK(check(kRightLock, "billing.a", "bearer flk_billing").allowed);
    CHECK(check(kRightLock, "billing.a", "BEARER  flk_billing ").allowed);
  }
  SECTION("403: a right or a name the key does not have") {
    const auto token = check(kRightToken, "billing.a", "Bearer flk_billing");
    CHECK(token.error == fencelock::WireError::kForbidden);
    CHECK_THAT(token.message, Catch::Contains("'token'") && Catch::Contains("lock, read"));
    const auto name = check(kRightLock, "payroll.a", "Bearer flk_billing");
    CHECK(name.error == fencelock::WireError::kForbidden);
    CHECK_THAT(name.message, Catch::Contains("payroll.a"));
  }
  SECTION("429 past the burst, with when to retry; a reload keeps the bucket") {
    CHECK(check(kRightLock, "billing.a", "Bearer flk_billing").allowed);
    CHECK(check(kRightRead, "billing.b", "Bearer flk_billing").allowed);
    const auto limited = check(kRightLock, "billing.a", "Bearer flk_billing");
    CHECK(limited.error == fencelock::WireError::kRateLimited);
    REQUIRE(limited.retry_after.has_value());
    CHECK(*limited.retry_after == 1000ms);
    keys.replace(keys_of(json::array({billing})));
    CHECK(check(kRightLock, "billing.a", "Bearer flk_billing").error ==
          fencelock::WireError::kRateLimited);
  }
  SECTION("a reload that drops a key refuses it at once") {
    keys.replace(keys_of(json::array({key_entry("ops", "flk_ops", {"*"}, {"read"})})));
    CHECK(check(kRightLock, "billing.a", "Bearer flk_billing").error ==
          fencelock::WireError::kUnauthenticated);
    CHECK(check(kRightRead, "x", "Bearer flk_ops").allowed);
  }
}

TEST_CASE("auth: key usage caps locks and waiters, counts leases until released or expired",
          "[service]") {
  const auto t0 = Clock::now();
  KeyUsage usage(2, 1);
  CHECK(usage.begin_wait());
  CHECK_FALSE(usage.begin_wait());
  usage.end_wait();
  CHECK(usage.begin_wait());
  usage.end_wait();

  REQUIRE(usage.reserve_lock(t0));
  REQUIRE(usage.reserve_lock(t0));
  CHECK_FALSE(usage.reserve_lock(t0));  // two in flight: the cap counts reservations
  usage.hold("a#1", t0 + 10s);
  usage.cancel_reservation();  // the second acquire failed
  REQUIRE(usage.reserve_lock(t0));
  usage.hold("b#1", t0 + 1s);
  CHECK(usage.held(t0) == 2);
  CHECK_FALSE(usage.reserve_lock(t0));
  CHECK(usage.reserve_lock(t0 + 2s));  // b expired
  usage.cancel_reservation();
  usage.renew("a#1", t0 + 20s);
  CHECK(usage.held(t0 + 15s) == 1);
  usage.drop("a#1");
  CHECK(usage.held(t0 + 15s) == 0);
}

TEST_CASE("auth: max_locks and max_waiters in the key file", "[service]") {
  json entry = key_entry("capped", "s", {"*"}, {"lock"});
  entry["max_locks"] = 10;
  entry["max_waiters"] = 3;
  const KeySet set = keys_of(json::array({entry}));
  CHECK(set.keys()[0].max_locks == std::optional<std::size_t>(10));
  CHECK(set.keys()[0].max_waiters == std::optional<std::size_t>(3));
  entry["max_locks"] = 0;
  CHECK_THAT(parse_error(json{{"keys", json::array({entry})}}.dump()),
             Catch::Contains("max_locks must be"));
  const Authorizer with_caps(keys_of(json::array({key_entry("c", "flk_c", {"*"}, {"lock"})})));
  CHECK(with_caps.check(kRightLock, "x", "Bearer flk_c", Clock::now()).usage == nullptr);
}
