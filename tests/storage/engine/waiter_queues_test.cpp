// WaiterQueues: who a release wakes, with fake waiters (pure logic, no Redis). The engine-level
// hand-offs are in waiter_wakeup_test.cpp and redlock_engine_test.cpp.
#include "engine/waiter_queues.h"

#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using fencelock::storage::Waiter;
using fencelock::storage::WaiterQueues;
using namespace std::chrono_literals;

namespace {

// Answers every wake-up with `answer` and records the names it was woken for.
struct FakeWaiter : Waiter {
  explicit FakeWaiter(Wake answer_with = Wake::kTaken) : answer(answer_with) {}
  Wake wake_now(std::string_view name) override {
    woken.emplace_back(name);
    return answer;
  }
  void become_first(std::chrono::steady_clock::duration frees_in) override { promoted = frees_in; }
  Wake answer;
  std::vector<std::string> woken;
  std::optional<std::chrono::steady_clock::duration> promoted;
};

}  // namespace

TEST_CASE("a release wakes the first waiter of its name that can use it", "[storage][waiters]") {
  WaiterQueues queues;
  auto passing = std::make_shared<FakeWaiter>(Waiter::Wake::kPassed);
  auto first = std::make_shared<FakeWaiter>();
  auto second = std::make_shared<FakeWaiter>();
  auto other = std::make_shared<FakeWaiter>();
  queues.add("a", passing);
  queues.add("a", first);
  queues.add("a", second);
  queues.add("b", other);
  CHECK(queues.has_waiters("a"));
  CHECK_FALSE(queues.has_waiters("c"));
  CHECK(queues.is_first("a", passing.get()));
  CHECK_FALSE(queues.is_first("a", first.get()));

  queues.wake_first("a", "tag-1");
  CHECK(passing->woken == std::vector<std::string>{"a"});  // passed it on
  CHECK(first->woken == std::vector<std::string>{"a"});    // took it
  CHECK(second->woken.empty());
  CHECK(other->woken.empty());

  SECTION("a later copy of the same release goes only to the waiter it woke") {
    queues.release_heard("a", "tag-1");
    CHECK(first->woken.size() == 2);
    CHECK(passing->woken.size() == 1);
    CHECK(second->woken.empty());
    queues.release_heard("a", "tag-2");  // a new release: from the front again
    CHECK(passing->woken.size() == 2);
    CHECK(first->woken.size() == 3);
  }
  SECTION("a wake-up handed on goes to the waiters behind the one that hands it") {
    queues.wake_after("a", first.get());
    CHECK(second->woken == std::vector<std::string>{"a"});
  }
  SECTION("a waiter gone from memory or removed is skipped, and an empty queue is dropped") {
    passing.reset();
    queues.remove("a", first.get());
    CHECK(queues.is_first("a", second.get()));
    queues.wake_first("a", "tag-3");
    CHECK(second->woken == std::vector<std::string>{"a"});
    queues.remove("a", second.get());
    CHECK_FALSE(queues.has_waiters("a"));
  }
  SECTION("the waiter behind a granted one becomes first, told when the grant frees") {
    queues.promote_after("a", first.get(), 250ms);
    CHECK(second->promoted == std::chrono::steady_clock::duration(250ms));
    CHECK_FALSE(first->promoted);
  }
}
