// The C++ SDK's lock sets, counting semaphores (#19) and read/write locks, and their listings,
// against the real service (real fencelockd, real redis-servers), and what it refuses before
// sending.
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <thread>

#include "fencelock/client.h"
#include "fencelock/lease_keeper.h"
#include "fencelock/lock_guard.h"
#include "service_under_test.h"

using namespace fencelock;
using namespace fencelock::testing;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

Client client_for(ServiceUnderTest& s) {
  ClientOptions options;
  options.endpoints = {s.endpoint()};
  auto client = Client::create(options);
  if (!client.ok()) FAIL(client.error().message);
  return std::move(client).value();
}

}  // namespace

TEST_CASE("sdk: a lock set is taken whole, fenced per name, extended and released as one",
          "[client][redis]") {
  ServiceUnderTest s;
  Client client = client_for(s);
  REQUIRE(client.next_token("b").value() == 1);  // b's counter is ahead of a's

  const auto sent = Clock::now();
  auto set = client.acquire_set({"b", "a"}, 10s, 0ms, "sdk-test");
  REQUIRE(set.ok());
  CHECK(set->kind() == LeaseKind::kSet);
  CHECK(set->names() == std::vector<std::string>{"a", "b"});
  CHECK(set->token_of("a") == 1);
  CHECK(set->token_of("b") == 2);  // each name's own counter, the one its single lock uses
  CHECK(set->token() == 0);
  CHECK(set->deadline() <= sent + 10s);
  CHECK(set->remaining() > 9s);
  CHECK(client.current_token("a").value() == 1);
  CHECK(client.current_token("b").value() == 2);

  SECTION("a single lock of one of its names, or a set that overlaps it, is refused") {
    CHECK(client.acquire("a", 1s).error().code == ErrorCode::kLocked);
    CHECK(client.acquire_set({"c", "b"}, 1s).error().code == ErrorCode::kLocked);
    CHECK(client.acquire("c", 1s).ok());  // the refused set left nothing of itself behind
  }
  SECTION("an extend moves the deadline of every name at once") {
    const auto before = set->deadline();
    REQUIRE(client.extend(set.value(), 30s).ok());
    CHECK(set->deadline() > before);
    CHECK(set->ttl() == 30s);
    CHECK(client.status("a")->remaining > 20s);
    CHECK(client.status("b")->remaining > 20s);
  }
  SECTION("a release frees every name, and is idempotent") {
    CHECK(client.release(set.value()).value() == true);
    CHECK(client.release(set.value()).value() == false);
    CHECK(client.extend(set.value(), 1s).error().code == ErrorCode::kNotHeld);
    CHECK_FALSE(client.status("a")->held);
    CHECK_FALSE(client.status("b")->held);
    auto single = client.acquire("a", 1s);
    REQUIRE(single.ok());
    CHECK(single->token() == 2);
  }
}

TEST_CASE("sdk: a lock set rebuilt from its lease string is released by another client",
          "[client][redis]") {
  ServiceUnderTest s;
  Client client = client_for(s);
  auto set = client.acquire_set({"x", "y", "z"}, 10s);
  REQUIRE(set.ok());
  auto copy = lease_from_string(LeaseKind::kSet, {"z", "x", "y"}, set->lease_string(), 10s);
  REQUIRE(copy.ok());
  Client other = client_for(s);
  CHECK(other.release(copy.value()).value() == true);
  CHECK_FALSE(client.status("y")->held);
}

TEST_CASE("sdk: a semaphore grants at most its permits, each on a slot of its own",
          "[client][redis]") {
  ServiceUnderTest s;
  Client client = client_for(s);
  auto first = client.acquire_permit("pool", 2, 10s);
  auto second = client.acquire_permit("pool", 2, 10s);
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK(first->kind() == LeaseKind::kPermit);
  CHECK(first->permits() == 2);
  CHECK(std::set<std::uint32_t>{first->slot(), second->slot()} == std::set<std::uint32_t>{0, 1});
  CHECK(second->token() > first->token());  // from the semaphore's counter, growing per grant
  CHECK(first->token_of("pool") == first->token());

  auto third = client.acquire_permit("pool", 2, 10s);
  REQUIRE_FALSE(third.ok());
  CHECK(third.error().code == ErrorCode::kLocked);

  auto mismatch = client.acquire_permit("pool", 3, 10s);
  REQUIRE_FALSE(mismatch.ok());
  CHECK(mismatch.error().code == ErrorCode::kPermitsMismatch);
  CHECK(mismatch.error().http_status == 409);
  CHECK_THAT(mismatch.error().message, Catch::Contains("2"));

  auto status = client.semaphore_status("pool");
  REQUIRE(status.ok());
  CHECK(status->permits == 2);
  CHECK(status->held == 2);

  const auto before = first->deadline();
  REQUIRE(client.extend(first.value(), 20s).ok());
  CHECK(first->deadline() > before);

  CHECK(client.release(first.value()).value() == true);
  CHECK(client.release(first.value()).value() == false);
  CHECK(client.semaphore_status("pool")->held == 1);
  auto again = client.acquire_permit("pool", 2, 10s);
  REQUIRE(again.ok());
  CHECK(again->slot() == first->slot());
  CHECK(again->token() > second->token());

  CHECK(client.release(second.value()).value() == true);
  CHECK(client.release(again.value()).value() == true);
  CHECK(client.semaphore_status("pool")->held == 0);
}

TEST_CASE("sdk: a waiting permit acquire gets the permit its holder releases", "[client][redis]") {
  ServiceUnderTest s;
  Client client = client_for(s);
  auto held = client.acquire_permit("one", 1, 10s);
  REQUIRE(held.ok());
  std::thread releaser([&] {
    std::this_thread::sleep_for(300ms);
    (void)client.release(held.value());
  });
  const auto started = Clock::now();
  auto waited = client.acquire_permit("one", 1, 10s, 5s);
  releaser.join();
  REQUIRE(waited.ok());
  CHECK(Clock::now() - started < 4s);
  CHECK(waited->token() > held->token());
}

TEST_CASE("sdk: a lease keeper and a lock guard work for lock sets and permits",
          "[client][redis]") {
  ServiceUnderTest s;
  Client client = client_for(s);
  {
    LeaseKeeper keeper(client, client.acquire_set({"k1", "k2"}, 300ms).value());
    CHECK(keeper.kind() == LeaseKind::kSet);
    CHECK(keeper.names() == std::vector<std::string>{"k1", "k2"});
    CHECK(keeper.token_of("k2") == 1);
    std::this_thread::sleep_for(900ms);
    CHECK_FALSE(keeper.lost());
    CHECK(keeper.renewals() >= 2);
    CHECK(client.status("k1")->held);
    CHECK(keeper.release().value() == true);
  }
  {
    LeaseKeeper keeper(client, client.acquire_permit("kp", 2, 300ms).value());
    CHECK(keeper.slot() < 2);
    CHECK(keeper.permits() == 2);
    std::this_thread::sleep_for(900ms);
    CHECK_FALSE(keeper.lost());
    CHECK(client.semaphore_status("kp")->held == 1);
  }  // the keeper releases
  CHECK(client.semaphore_status("kp")->held == 0);
  {
    LockGuard guard(client, client.acquire_set({"g1", "g2"}, 10s).value());
    CHECK(client.status("g2")->held);
  }
  CHECK_FALSE(client.status("g2")->held);
  auto done = with_lease(client, client.acquire_permit("wp", 1, 300ms), [&](LeaseKeeper& k) {
    CHECK(k.kind() == LeaseKind::kPermit);
    CHECK(client.semaphore_status("wp")->held == 1);
  });
  CHECK(done.ok());
  CHECK(client.semaphore_status("wp")->held == 0);
}

TEST_CASE("sdk: bad lock sets and permit counts are refused before anything is sent", "[client]") {
  auto client = Client::create({}).value();  // nothing listens there: a request would fail
  std::vector<std::string> seventeen;
  for (int i = 0; i < 17; ++i) seventeen.push_back("n" + std::to_string(i));
  CHECK(client.acquire_set({}, 1s).error().code == ErrorCode::kInvalidArgument);
  CHECK(client.acquire_set(seventeen, 1s).error().code == ErrorCode::kInvalidArgument);
  CHECK(client.acquire_set({"a", "b", "a"}, 1s).error().code == ErrorCode::kInvalidArgument);
  CHECK(client.acquire_set({"a", "bad name"}, 1s).error().code == ErrorCode::kInvalidArgument);
  CHECK(client.acquire_set({"a", "b"}, 0ms).error().code == ErrorCode::kInvalidArgument);
  CHECK(client.acquire_permit("pool", 0, 1s).error().code == ErrorCode::kInvalidArgument);
  CHECK(client.acquire_permit("pool", 65, 1s).error().code == ErrorCode::kInvalidArgument);
  CHECK(client.acquire_permit("a/b", 2, 1s).error().code == ErrorCode::kInvalidArgument);
  CHECK(client.semaphore_status("..").error().code == ErrorCode::kInvalidArgument);
  CHECK(client.list_semaphores("", 0).error().code == ErrorCode::kInvalidArgument);
  CHECK(client.list_semaphores("", 1001).error().code == ErrorCode::kInvalidArgument);
  CHECK(client.list_rwlocks("a b").error().code == ErrorCode::kInvalidArgument);
  CHECK(client.list_rwlocks("", 10, "x/y").error().code == ErrorCode::kInvalidArgument);
  CHECK(error_code_name(ErrorCode::kPermitsMismatch) == "permits_mismatch");
}

TEST_CASE("sdk: a read/write lock shares reads, fences a write above them, and rebuilds leases",
          "[client][redis][rwlock]") {
  ServiceUnderTest s;
  Client client = client_for(s);
  auto first = client.acquire_read("doc", 10s, 0ms, "reader-1");
  REQUIRE(first.ok());
  CHECK(first->kind() == LeaseKind::kRead);
  CHECK(first->lease_string().ends_with(".r"));
  CHECK(first->remaining() > 8s);
  auto second = client.acquire_read("doc", 10s);
  REQUIRE(second.ok());
  CHECK(second->token() > first->token());
  auto refused = client.acquire_write("doc", 10s);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::kLocked);

  auto status = client.rwlock_status("doc");
  REQUIRE(status.ok());
  CHECK(status->mode == LeaseKind::kRead);
  REQUIRE(status->holders.size() == 2);
  CHECK(status->holders[0].owner == "reader-1");
  CHECK_FALSE(status->writer_waiting);

  REQUIRE(client.extend(*first, 20s).ok());
  CHECK(first->remaining() > 18s);
  // Another process holds the lease string only: rebuilt, it releases the grant.
  auto rebuilt = lease_from_string(LeaseKind::kRead, {"doc"}, second->lease_string(), 10s);
  REQUIRE(rebuilt.ok());
  CHECK(client.release(*rebuilt).value());
  CHECK(lease_from_string(LeaseKind::kWrite, {"doc"}, second->lease_string(), 10s).error().code ==
        ErrorCode::kInvalidArgument);
  CHECK(client.release(*first).value());

  auto writer = client.acquire_write("doc", 10s, 2s);
  REQUIRE(writer.ok());
  CHECK(writer->kind() == LeaseKind::kWrite);
  CHECK(writer->token() > second->token());
  CHECK(client.rwlock_status("doc")->mode == LeaseKind::kWrite);
  CHECK(client.acquire_read("doc", 1s).error().code == ErrorCode::kLocked);
  CHECK(client.release(*writer).value());
  CHECK_FALSE(client.rwlock_status("doc")->mode.has_value());
  CHECK(client.acquire_read("bad name", 1s).error().code == ErrorCode::kInvalidArgument);
}

TEST_CASE(
    "sdk: semaphores with a permit held are listed by prefix, with their status, page by page",
    "[client][redis]") {
  ServiceUnderTest s;
  Client client = client_for(s);
  auto first = client.acquire_permit("pool-a", 3, 10s, 0ms, "worker-1");
  auto second = client.acquire_permit("pool-a", 3, 10s);
  auto other = client.acquire_permit("pool-b", 2, 10s);
  auto outside = client.acquire_permit("spare", 1, 10s);
  REQUIRE((first.ok() && second.ok() && other.ok() && outside.ok()));

  auto page = client.list_semaphores("pool");
  REQUIRE(page.ok());
  CHECK_FALSE(page->next);
  std::map<std::string, SemaphoreStatus> listed;  // a name may be listed more than once
  for (const ListedSemaphore& one : page->semaphores) listed[one.name] = one.status;
  REQUIRE(listed.size() == 2);  // not "spare": outside the prefix
  CHECK(listed["pool-a"].permits == 3);
  CHECK(listed["pool-a"].held == 2);
  CHECK(listed["pool-b"].permits == 2);
  CHECK(listed["pool-b"].held == 1);

  std::set<std::string> paged;
  std::string cursor;
  for (int pages = 0; pages < 1000; ++pages) {
    auto one = client.list_semaphores("pool", 1, cursor);
    REQUIRE(one.ok());
    for (const ListedSemaphore& entry : one->semaphores) paged.insert(entry.name);
    if (!one->next) break;
    cursor = *one->next;
  }
  CHECK(paged == std::set<std::string>{"pool-a", "pool-b"});

  REQUIRE(client.release(*other).value());  // no permit of pool-b is held now: it is left out
  auto after = client.list_semaphores("pool");
  REQUIRE(after.ok());
  CHECK_FALSE(after->semaphores.empty());
  for (const ListedSemaphore& one : after->semaphores) CHECK(one.name == "pool-a");
}

TEST_CASE(
    "sdk: read/write locks with a grant held are listed by prefix with their mode and holders",
    "[client][redis][rwlock]") {
  ServiceUnderTest s;
  Client client = client_for(s);
  auto reader = client.acquire_read("doc-a", 10s, 0ms, "reader-1");
  auto second_reader = client.acquire_read("doc-a", 10s);
  auto writer = client.acquire_write("doc-b", 10s, 0ms, "writer-1");
  auto outside = client.acquire_write("other", 10s);
  REQUIRE((reader.ok() && second_reader.ok() && writer.ok() && outside.ok()));

  auto page = client.list_rwlocks("doc-");
  REQUIRE(page.ok());
  CHECK_FALSE(page->next);
  std::map<std::string, RwLockStatus> listed;  // a name may be listed more than once
  for (const ListedRwLock& one : page->rwlocks) listed[one.name] = one.status;
  REQUIRE(listed.size() == 2);
  const RwLockStatus& read = listed["doc-a"];
  CHECK(read.mode == LeaseKind::kRead);
  REQUIRE(read.holders.size() == 2);  // by token
  CHECK(read.holders[0].token == reader->token());
  CHECK(read.holders[0].owner == "reader-1");
  CHECK(read.holders[1].token == second_reader->token());
  CHECK_FALSE(read.holders[1].owner);
  CHECK(read.holders[1].remaining > 0ms);
  CHECK_FALSE(read.writer_waiting);
  const RwLockStatus& write = listed["doc-b"];
  CHECK(write.mode == LeaseKind::kWrite);
  REQUIRE(write.holders.size() == 1);
  CHECK(write.holders[0].token == writer->token());
  CHECK(write.holders[0].owner == "writer-1");

  // A freed read/write lock is left out, and a lock of the same prefix is not a read/write lock.
  REQUIRE(client.release(*writer).value());
  REQUIRE(client.acquire("doc-c", 10s).ok());
  auto after = client.list_rwlocks("doc-");
  REQUIRE(after.ok());
  CHECK_FALSE(after->rwlocks.empty());
  for (const ListedRwLock& one : after->rwlocks) CHECK(one.name == "doc-a");
  auto locks = client.list_locks("doc-");
  REQUIRE(locks.ok());
  REQUIRE(locks->locks.size() == 1);
  CHECK(locks->locks[0].name == "doc-c");
}
