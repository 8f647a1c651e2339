// The fault campaign's checkers on small hand-made histories: each property is reported when it
// breaks and only then (a blind checker would make every campaign run pass).
#include "checkers.h"

#include <catch2/catch.hpp>

using namespace fencelock::faults;

namespace {

constexpr std::int64_t kMs = 1'000'000;

Operation op(const std::string& f, std::int64_t invoke_ms, std::int64_t complete_ms,
             Outcome outcome, std::uint64_t token = 0) {
  Operation o;
  o.f = f;
  o.name = "n";
  o.invoke_ns = invoke_ms * kMs;
  o.complete_ns = complete_ms * kMs;
  o.outcome = outcome;
  o.token = token;
  return o;
}

Operation grant(std::int64_t invoke_ms, std::int64_t complete_ms, std::uint64_t token,
                std::int64_t validity_ms, std::int64_t waited_ms = 0) {
  Operation o = op("acquire", invoke_ms, complete_ms, Outcome::kOk, token);
  o.validity_ms = validity_ms;
  o.waited_ms = waited_ms;
  return o;
}

// A revoke of "n": granted (kOk) with `token` and `validity_ms`, or not (then both unused).
Operation revoke(std::int64_t invoke_ms, std::int64_t complete_ms, Outcome outcome,
                 std::uint64_t token = 0, std::int64_t validity_ms = -1) {
  Operation o = op("revoke", invoke_ms, complete_ms, outcome, token);
  o.validity_ms = validity_ms;
  return o;
}

// An acquire of "n" that named its request `request`: granted (kOk) `lease` with `token` and
// `validity_ms`, marked `repeated` or not; or not granted (then those are unused).
Operation asked(std::int64_t invoke_ms, std::int64_t complete_ms, Outcome outcome,
                const std::string& request, std::uint64_t token = 0, std::int64_t validity_ms = -1,
                const std::string& lease = "", bool repeated = false) {
  Operation o = op("acquire", invoke_ms, complete_ms, outcome, token);
  o.request_id = request;
  o.validity_ms = validity_ms;
  o.lease_string = lease;
  o.repeated = repeated;
  return o;
}

Operation on_lease(const std::string& f, std::int64_t lease, std::int64_t invoke_ms,
                   std::int64_t complete_ms, Outcome outcome, std::int64_t validity_ms = -1) {
  Operation o = op(f, invoke_ms, complete_ms, outcome);
  o.lease = lease;
  o.validity_ms = validity_ms;
  return o;
}

// A listing of prefix "n" that read all its pages and answered `listed` (name, token).
Operation listing(std::int64_t invoke_ms, std::int64_t complete_ms,
                  std::vector<Listed> listed = {}) {
  Operation o = op("list", invoke_ms, complete_ms, Outcome::kOk);
  o.pages = 3;
  o.listed = std::move(listed);
  return o;
}

// A grant of "n" that asked for `ttl_ms`.
Operation grant_ttl(std::int64_t invoke_ms, std::int64_t complete_ms, std::uint64_t token,
                    std::int64_t ttl_ms, Outcome outcome = Outcome::kOk) {
  Operation o = op("acquire", invoke_ms, complete_ms, outcome, outcome == Outcome::kOk ? token : 0);
  o.ttl_ms = ttl_ms;
  o.validity_ms = outcome == Outcome::kOk ? ttl_ms - 10 : -1;
  return o;
}

Operation note(const std::string& what, std::int64_t at_ms) {
  Operation o = op(what, at_ms, at_ms, Outcome::kOk);
  o.process = -1;
  o.name = "";
  return o;
}

}  // namespace

TEST_CASE("checkers: tokens must be unique and follow real-time order", "[faults]") {
  SECTION("overlapping draws may complete in either order") {
    CHECK(
        check_tokens({op("draw", 0, 10, Outcome::kOk, 2), op("draw", 1, 5, Outcome::kOk, 1)}).ok());
  }
  SECTION("a draw invoked after another completed must be larger") {
    const auto result =
        check_tokens({op("draw", 0, 5, Outcome::kOk, 2), op("draw", 6, 9, Outcome::kOk, 1)});
    REQUIRE(result.violations.size() == 1);
    CHECK(result.violations[0].operations == std::vector<std::size_t>{0, 1});
  }
  SECTION("a token answered twice") {
    const auto result = check_tokens({grant(0, 5, 7, 100), op("draw", 1, 3, Outcome::kOk, 7)});
    CHECK_FALSE(result.ok());
  }
  SECTION("revokes share the counter: unique and in real-time order with grants and draws") {
    CHECK(check_tokens({grant(0, 5, 3, 100), revoke(6, 8, Outcome::kOk, 4, 100),
                        op("draw", 9, 10, Outcome::kOk, 5)})
              .ok());
    CHECK_FALSE(check_tokens({grant(0, 5, 3, 100), revoke(6, 8, Outcome::kOk, 3, 100)}).ok());
    const auto late = check_tokens({revoke(0, 5, Outcome::kOk, 7, 100), grant(6, 9, 6, 100)});
    REQUIRE(late.violations.size() == 1);
    CHECK(late.violations[0].operations == std::vector<std::size_t>{0, 1});
  }
  SECTION("unknown and failed operations are not judged") {
    CHECK(check_tokens({op("draw", 0, 5, Outcome::kOk, 2), op("draw", 6, 9, Outcome::kInfo, 1)})
              .ok());
  }
}

// A read/write lock's grant of "n" in `mode` ("read" or "write").
Operation rw_grant(const std::string& mode, std::int64_t invoke_ms, std::int64_t complete_ms,
                   std::uint64_t token, std::int64_t validity_ms) {
  Operation o = grant(invoke_ms, complete_ms, token, validity_ms);
  o.mode = mode;
  return o;
}

TEST_CASE("checkers: read grants may share a name, a write grant shares it with nothing",
          "[faults]") {
  SECTION("readers overlap") {
    CHECK(check_leases({rw_grant("read", 0, 10, 1, 100), rw_grant("read", 5, 20, 2, 100),
                        rw_grant("read", 30, 40, 3, 100)})
              .ok());
  }
  SECTION("a writer inside a reader's validity") {
    const auto result =
        check_leases({rw_grant("read", 0, 10, 1, 100), rw_grant("write", 20, 30, 2, 100)});
    REQUIRE(result.violations.size() == 1);
    CHECK(result.violations[0].message.find("a read and a write lease") != std::string::npos);
  }
  SECTION("a reader inside a writer's validity, even after other readers") {
    const auto result =
        check_leases({rw_grant("write", 0, 10, 1, 100), rw_grant("read", 200, 210, 3, 100),
                      rw_grant("read", 50, 60, 2, 100)});
    REQUIRE(result.violations.size() == 1);
    CHECK(result.violations[0].operations == std::vector<std::size_t>{0, 2});
  }
  SECTION("two writers") {
    CHECK_FALSE(
        check_leases({rw_grant("write", 0, 10, 1, 100), rw_grant("write", 20, 30, 2, 100)}).ok());
  }
  SECTION("a writer after the readers released") {
    CHECK(check_leases({rw_grant("read", 0, 10, 1, 100), rw_grant("read", 5, 12, 2, 100),
                        on_lease("release", 0, 40, 41, Outcome::kOk),
                        on_lease("release", 1, 42, 43, Outcome::kOk),
                        rw_grant("write", 30, 45, 3, 100)})
              .ok());
  }
  SECTION("read/write grants are not listed as locks") {
    Operation held = rw_grant("read", 0, 10, 1, 1000);
    held.name = "n-rw";
    held.ttl_ms = 1000;
    CHECK(check_listing({held, listing(20, 30, {})}).ok());
    CHECK_FALSE(check_listing({held, listing(20, 30, {{"n-rw", 1}})}).ok());
  }
}

TEST_CASE("checkers: two leases of one name must never be valid at once", "[faults]") {
  SECTION("back to back is fine") {
    CHECK(check_leases({grant(0, 10, 1, 100), grant(5, 120, 2, 100)}).ok());
  }
  SECTION("the second granted inside the first's validity") {
    const auto result = check_leases({grant(0, 10, 1, 100), grant(5, 50, 2, 100)});
    REQUIRE(result.violations.size() == 1);
    CHECK(result.violations[0].operations == std::vector<std::size_t>{0, 1});
  }
  SECTION("a release cuts the window where it was invoked") {
    CHECK(check_leases({grant(0, 10, 1, 100), on_lease("release", 0, 40, 41, Outcome::kInfo),
                        grant(30, 45, 2, 100)})
              .ok());
  }
  SECTION("a successful extend pushes the deadline out; a failed one does not") {
    const auto extended =
        check_leases({grant(0, 10, 1, 100), on_lease("extend", 0, 90, 91, Outcome::kOk, 100),
                      grant(95, 150, 2, 100)});
    CHECK_FALSE(extended.ok());
    CHECK(check_leases({grant(0, 10, 1, 100), on_lease("extend", 0, 90, 91, Outcome::kInfo),
                        grant(95, 150, 2, 100)})
              .ok());
  }
  SECTION("waited_ms counts toward the deadline") {
    CHECK_FALSE(check_leases({grant(0, 60, 1, 50, 40), grant(70, 80, 2, 100)}).ok());
  }
  SECTION("an answer that arrived after its own deadline held nothing") {
    CHECK(check_leases({grant(0, 200, 1, 100), grant(150, 160, 2, 100)}).ok());
  }
}

TEST_CASE("checkers: a revoke ends the windows it took over, and only those", "[faults]") {
  SECTION("the revoked window may overlap its revoker's") {
    CHECK(check_leases({grant(0, 10, 1, 100), revoke(30, 40, Outcome::kOk, 2, 100)}).ok());
  }
  SECTION("without the revoke the same windows are a violation (the control)") {
    CHECK_FALSE(check_leases({grant(0, 10, 1, 100), grant(30, 40, 2, 100)}).ok());
  }
  SECTION("a window opened after the revoke's invoke that overlaps the revoker's is a violation") {
    // Invoked after the revoke was answered, with a larger token: granted over the revoker.
    const auto result = check_leases({revoke(30, 40, Outcome::kOk, 2, 100), grant(45, 50, 3, 100)});
    REQUIRE(result.violations.size() == 1);
    CHECK(result.violations[0].operations == std::vector<std::size_t>{0, 1});
    // Answered after the revoke's invoke, a larger token: granted after the revoke took effect.
    CHECK_FALSE(check_leases({grant(20, 35, 3, 100), revoke(30, 40, Outcome::kOk, 2, 100)}).ok());
  }
  SECTION("a grant answered during the revoke with a smaller token was taken over by it") {
    CHECK(check_leases({grant(20, 35, 1, 100), revoke(30, 40, Outcome::kOk, 2, 100)}).ok());
  }
  SECTION("the revoker's own window is checked against later grants") {
    const auto result = check_leases(
        {grant(0, 10, 1, 100), revoke(30, 40, Outcome::kOk, 2, 100), grant(60, 70, 3, 100)});
    REQUIRE(result.violations.size() == 1);
    CHECK(result.violations[0].operations == std::vector<std::size_t>{1, 2});
    CHECK(check_leases({grant(0, 10, 1, 100), revoke(30, 40, Outcome::kOk, 2, 100),
                        on_lease("release", 1, 55, 56, Outcome::kOk), grant(50, 60, 3, 100)})
              .ok());
  }
  SECTION("a revoke of unknown outcome ends the windows opened before it, too") {
    CHECK(
        check_leases({grant(0, 10, 1, 100), revoke(30, 40, Outcome::kInfo), grant(35, 45, 3, 100)})
            .ok());
    // ...but no window opened after its invoke.
    CHECK_FALSE(
        check_leases({revoke(30, 40, Outcome::kInfo), grant(31, 45, 1, 100), grant(50, 60, 3, 100)})
            .ok());
  }
  SECTION("a revoke that failed ends no window: what it overwrote is back or still taken") {
    CHECK_FALSE(
        check_leases({grant(0, 10, 1, 100), revoke(30, 40, Outcome::kFail), grant(35, 45, 3, 100)})
            .ok());
  }
  SECTION("a revoke ends only its own name's windows") {
    Operation other = grant(0, 10, 1, 100);
    other.name = "m";
    Operation after = grant(30, 40, 2, 100);
    after.name = "m";
    CHECK_FALSE(check_leases({other, revoke(20, 25, Outcome::kInfo), after}).ok());
  }
}

TEST_CASE("checkers: a repeated answer is the grant it repeats, not a second one", "[faults]") {
  const Operation first = asked(0, 10, Outcome::kOk, "r", 5, 100, "5.a");
  SECTION("tokens: the same token again, marked repeated, with the same request and lease") {
    CHECK(check_tokens({first, asked(20, 25, Outcome::kOk, "r", 5, 90, "5.a", true)}).ok());
    // A twin sent at once may be the one answered first, and the grant's own answer may be lost.
    CHECK(check_tokens({asked(0, 9, Outcome::kOk, "r", 5, 100, "5.a", true),
                        asked(1, 10, Outcome::kOk, "r", 5, 100, "5.a")})
              .ok());
    CHECK(check_tokens({asked(0, 3000, Outcome::kInfo, "r"),
                        asked(3000, 3010, Outcome::kOk, "r", 5, 100, "5.a", true)})
              .ok());
  }
  SECTION("tokens: the same token unmarked, or under another lease or request, is answered twice") {
    // Answered twice, and out of real-time order, too.
    const auto unmarked = check_tokens({first, asked(20, 25, Outcome::kOk, "r", 5, 90, "5.a")});
    REQUIRE(unmarked.violations.size() == 2);
    CHECK(unmarked.violations[0].message.find("answered twice") != std::string::npos);
    CHECK(unmarked.violations[0].operations == std::vector<std::size_t>{0, 1});
    CHECK_FALSE(check_tokens({first, asked(20, 25, Outcome::kOk, "r", 5, 90, "5.b", true)}).ok());
    CHECK_FALSE(check_tokens({first, asked(20, 25, Outcome::kOk, "q", 5, 90, "5.a", true)}).ok());
    CHECK_FALSE(check_tokens({grant(0, 10, 5, 100), grant(20, 25, 5, 90)}).ok());
  }
  SECTION("tokens: a repeat is judged in real-time order from its request's first attempt") {
    // The grant it repeats completed before it was sent: the same grant, not an older token.
    CHECK(check_tokens({first, grant(12, 200, 6, 100),
                        asked(30, 35, Outcome::kOk, "r", 5, 100, "5.a", true)})
              .ok());
    // A larger token had completed before the request was first sent.
    const auto late = check_tokens({grant(0, 5, 7, 100), asked(10, 3000, Outcome::kInfo, "r"),
                                    asked(3000, 3010, Outcome::kOk, "r", 5, 100, "5.a", true)});
    REQUIRE(late.violations.size() == 1);
    CHECK(late.violations[0].operations == std::vector<std::size_t>{0, 2});
  }
  SECTION("leases: a grant and its repeat are one holder, whose windows may overlap") {
    CHECK(check_leases({first, asked(20, 25, Outcome::kOk, "r", 5, 100, "5.a", true)}).ok());
  }
  SECTION("leases: another lease inside either answer's window is a violation") {
    const auto result = check_leases(
        {first, asked(50, 55, Outcome::kOk, "r", 5, 100, "5.a", true), grant(120, 130, 6, 100)});
    REQUIRE(result.violations.size() == 1);
    CHECK(result.violations[0].operations == std::vector<std::size_t>{1, 2});
    // The same lease under another request is another holder.
    CHECK_FALSE(check_leases({first, asked(20, 25, Outcome::kOk, "q", 5, 100, "5.a", true)}).ok());
  }
  SECTION("leases: a release of the lease ends the windows of all its answers") {
    const Operation repeat = asked(20, 25, Outcome::kOk, "r", 5, 100, "5.a", true);
    CHECK(check_leases(
              {first, repeat, on_lease("release", 0, 40, 41, Outcome::kOk), grant(45, 50, 6, 100)})
              .ok());
    CHECK_FALSE(check_leases({first, repeat, grant(45, 50, 6, 100)}).ok());
  }
}

TEST_CASE("checkers: one request must never be granted two leases at once", "[faults]") {
  const Operation first = asked(0, 10, Outcome::kOk, "r", 5, 100, "5.a");
  SECTION("another lease answered while the first was valid") {
    const auto result = check_requests({first, asked(20, 30, Outcome::kOk, "r", 6, 100, "6.b")});
    REQUIRE(result.violations.size() == 1);
    CHECK(result.violations[0].operations == std::vector<std::size_t>{0, 1});
    CHECK_FALSE(
        check_requests({first, asked(20, 30, Outcome::kOk, "r", 6, 100, "6.b", true)}).ok());
  }
  SECTION("the same lease again is the same grant") {
    CHECK(check_requests({first, asked(20, 30, Outcome::kOk, "r", 5, 100, "5.a", true)}).ok());
  }
  SECTION("once the first expired, was released or revoked, the request may be granted anew") {
    CHECK(check_requests({first, asked(110, 120, Outcome::kOk, "r", 6, 100, "6.b")}).ok());
    CHECK(check_requests({first, on_lease("release", 0, 15, 16, Outcome::kOk),
                          asked(20, 30, Outcome::kOk, "r", 6, 100, "6.b")})
              .ok());
    CHECK(check_requests({first, revoke(15, 18, Outcome::kOk, 6, 100),
                          asked(20, 30, Outcome::kOk, "r", 7, 100, "7.b")})
              .ok());
  }
  SECTION("other requests are not judged together") {
    CHECK(check_requests({first, asked(20, 30, Outcome::kOk, "q", 6, 100, "6.b")}).ok());
  }
  SECTION("an answer marked repeated needs another attempt sent before it was answered") {
    const auto alone = check_requests({asked(0, 10, Outcome::kOk, "r", 5, 100, "5.a", true)});
    REQUIRE(alone.violations.size() == 1);
    CHECK(alone.violations[0].operations == std::vector<std::size_t>{0});
    CHECK(check_requests({asked(0, 10, Outcome::kOk, "r", 5, 100, "5.a", true),
                          asked(2, 3000, Outcome::kInfo, "r")})
              .ok());
    CHECK_FALSE(check_requests({asked(0, 10, Outcome::kOk, "r", 5, 100, "5.a", true),
                                asked(20, 3000, Outcome::kInfo, "r")})
                    .ok());
  }
}

TEST_CASE("checkers: a listing never lists a name no lease of could have been live", "[faults]") {
  // Held from 0 with a 1 s ttl: live at most until 10 + 1000 ms + the 5 s late-write margin.
  const Operation held = grant_ttl(0, 10, 1, 1000);
  CHECK(check_listing({held, listing(5000, 5010, {{"n", 1}})}).ok());
  CHECK_FALSE(check_listing({held, listing(7000, 7010, {{"n", 1}})}).ok());
  CHECK_FALSE(check_listing({listing(0, 10, {{"never-acquired", 1}})}).ok());
  CHECK(check_listing({held, listing(7000, 7010)}).ok());
  SECTION("an extend, even refused, may have lengthened it on the nodes it reached") {
    Operation extend = on_lease("extend", 0, 3000, 3010, Outcome::kFail);
    extend.ttl_ms = 1000;
    CHECK(check_listing({held, extend, listing(7000, 7010, {{"n", 1}})}).ok());
  }
  SECTION("a grant whose answer was lost, or whose ttl is unknown, may still be live") {
    CHECK(
        check_listing({grant_ttl(0, 10, 0, 1000, Outcome::kInfo), listing(5000, 5010, {{"n", 7}})})
            .ok());
    CHECK_FALSE(
        check_listing({grant_ttl(0, 10, 0, 1000, Outcome::kInfo), listing(9000, 9010, {{"n", 7}})})
            .ok());
    CHECK(
        check_listing({grant_ttl(0, 10, 0, -1, Outcome::kInfo), listing(90000, 90010, {{"n", 7}})})
            .ok());
    Operation pending = grant_ttl(0, 10, 0, 1000, Outcome::kInfo);
    pending.outcome = Outcome::kPending;
    CHECK(check_listing({pending, listing(90000, 90010, {{"n", 7}})}).ok());
  }
  SECTION("a listing that did not finish is not judged") {
    Operation cut = listing(7000, 7010, {{"n", 1}});
    cut.outcome = Outcome::kInfo;
    const auto result = check_listing({held, cut});
    CHECK(result.ok());
    CHECK(result.checked == 0);
  }
}

TEST_CASE("checkers: a listed token is the token of a lease that could have been live",
          "[faults]") {
  const Operation first = grant_ttl(0, 10, 1, 1000);
  const Operation second = grant_ttl(20000, 20010, 2, 1000);
  CHECK(check_listing({first, second, listing(100, 110, {{"n", 1}})}).ok());
  CHECK_FALSE(check_listing({first, second, listing(100, 110, {{"n", 2}})}).ok());
  CHECK_FALSE(check_listing({first, second, listing(20100, 20110, {{"n", 1}})}).ok());
  // A refused acquire may have left a value of its own, whose token nobody was told.
  CHECK(check_listing(
            {first, grant_ttl(50, 60, 0, 1000, Outcome::kFail), listing(100, 110, {{"n", 9}})})
            .ok());
}

TEST_CASE("checkers: a name certainly held throughout a listing is listed", "[faults]") {
  const Operation held = grant_ttl(0, 10, 1, 1000);  // window [10, 990] ms
  CHECK(check_listing({held, listing(100, 200, {{"n", 1}})}).ok());
  const auto missed = check_listing({held, listing(100, 200)});
  REQUIRE(missed.violations.size() == 1);
  CHECK(missed.violations[0].message.find("not listed") != std::string::npos);
  SECTION("unless it was not held throughout it") {
    CHECK(check_listing({held, listing(5, 200)}).ok());     // began before the answer
    CHECK(check_listing({held, listing(900, 1100)}).ok());  // ended after the deadline
    CHECK(check_listing({held, on_lease("release", 0, 150, 160, Outcome::kOk), listing(100, 200)})
              .ok());
    CHECK(check_listing({held, on_lease("extend", 0, 150, 160, Outcome::kInfo), listing(100, 200)})
              .ok());
    CHECK(check_listing({held, revoke(150, 160, Outcome::kInfo), listing(100, 200)}).ok());
  }
  SECTION("unless the listing's prefix does not cover it") {
    Operation other = listing(100, 200);
    other.name = "m";
    CHECK(check_listing({held, other}).ok());
  }
  SECTION("judged only outside the fault phase") {
    CHECK(check_listing({held, note("faults-begin", 50), listing(100, 200)}).ok());
    CHECK_FALSE(check_listing({note("faults-begin", 0), note("healed", 5),
                               grant_ttl(6, 10, 1, 1000), listing(100, 200)})
                    .ok());
    CHECK(check_listing({note("faults-begin", 0), grant_ttl(6, 10, 1, 1000), note("healed", 50),
                         listing(100, 200)})
              .ok());
  }
}

TEST_CASE("checkers: the store must never apply a write older than what it had seen", "[faults]") {
  const auto entry = [](std::uint64_t seq, const std::string& op, std::uint64_t token,
                        const std::string& outcome) {
    return StoreEntry{seq, op, "k", token, outcome};
  };
  CHECK(check_store({entry(1, "write", 3, "applied"), entry(2, "write", 3, "applied"),
                     entry(3, "write", 2, "rejected_stale")})
            .ok());
  CHECK_FALSE(
      check_store({entry(1, "fenced_read", 5, "fenced"), entry(2, "write", 4, "applied")}).ok());
  CHECK_FALSE(check_store({entry(2, "write", 4, "applied_unfenced"),
                           entry(1, "write", 5, "applied_unfenced")})
                  .ok());

  const auto parsed = parse_store_log(
      "{\"seq\":1,\"op\":\"write\",\"key\":\"k\",\"token\":9,\"outcome\":\"applied\"}\nnot json\n");
  REQUIRE(parsed.size() == 1);
  CHECK(parsed[0].token == 9);
  CHECK(parsed[0].outcome == "applied");
}

TEST_CASE("checkers: every acknowledged set element must survive", "[faults]") {
  Operation written = op("write", 0, 1, Outcome::kOk, 3);
  written.value = "a,b";
  Operation unknown = op("write", 2, 3, Outcome::kInfo, 4);
  unknown.value = "a,b,c";
  CHECK(check_set({written, unknown}, {{"n", "a,b"}}).ok());
  const auto lost = check_set({written}, {{"n", "a"}});
  REQUIRE(lost.violations.size() == 1);
  CHECK(lost.violations[0].message.find("b") != std::string::npos);
  // Each key against its own final set; a key not given is not judged.
  Operation other = op("write", 4, 5, Outcome::kOk, 1);
  other.name = "m";
  other.value = "x";
  CHECK(check_set({written, other}, {{"n", "a,b"}, {"m", "x"}}).ok());
  CHECK_FALSE(check_set({written, other}, {{"n", "a,b"}, {"m", "b"}}).ok());
  CHECK(check_set({written, other}, {{"n", "a,b"}}).ok());
}

TEST_CASE("checkers: grants must resume within the bound after the faults heal", "[faults]") {
  using std::chrono::milliseconds;
  const std::vector<Operation> history{
      grant(100, 200, 1, 50), op("acquire", 1000, 4000, Outcome::kInfo), grant(4000, 4500, 2, 50)};
  CHECK(check_liveness(history, 1000 * kMs, milliseconds(4000)).ok());
  CHECK_FALSE(check_liveness(history, 1000 * kMs, milliseconds(3000)).ok());
  CHECK_FALSE(check_liveness(history, 5000 * kMs, milliseconds(3000)).ok());
}

TEST_CASE("checkers: liveness judges one name in one mode when asked: readers do not hide writers",
          "[faults]") {
  using std::chrono::milliseconds;
  const auto rw = [](Operation o, const char* mode) {
    o.name = "rw";
    o.mode = mode;
    return o;
  };
  std::vector<Operation> history{grant(1100, 1200, 1, 50),  // "n"
                                 rw(grant(1100, 1300, 2, 50), "read"),
                                 rw(op("acquire", 1100, 3100, Outcome::kFail), "write")};
  CHECK(check_liveness(history, 1000 * kMs, milliseconds(4000), "n").ok());
  CHECK(check_liveness(history, 1000 * kMs, milliseconds(4000), "rw").ok());
  const auto starved = check_liveness(history, 1000 * kMs, milliseconds(4000), "rw", "write");
  REQUIRE(starved.violations.size() == 1);
  CHECK(starved.violations[0].message.find("acquire of rw in write mode") != std::string::npos);
  history.push_back(rw(grant(3200, 3500, 3, 50), "write"));
  CHECK(check_liveness(history, 1000 * kMs, milliseconds(4000), "rw", "write").ok());
}

TEST_CASE("checkers: a violation is shown with the operations around it", "[faults]") {
  const std::vector<Operation> history{grant(0, 10, 1, 100), op("draw", 20, 21, Outcome::kOk, 9),
                                       grant(5, 50, 2, 100)};
  const auto result = check_leases(history);
  REQUIRE(result.violations.size() == 1);
  const std::string text = describe(history, result.violations[0]);
  CHECK(text.find("* #0") != std::string::npos);
  CHECK(text.find("* #2") != std::string::npos);
  CHECK(text.find("#1 ") != std::string::npos);  // same name, in the window
}
