#include "fencelock/storage/quorum.h"

#include <catch2/catch.hpp>

using namespace fencelock::storage;

TEST_CASE("the quorum is a strict majority of all configured nodes", "[storage]") {
  const auto [nodes, quorum] = GENERATE(
      table<std::size_t, std::size_t>({{1, 1}, {2, 2}, {3, 2}, {4, 3}, {5, 3}, {6, 4}, {7, 4}}));
  CHECK(quorum_size(nodes) == quorum);
}

TEST_CASE("a tally decides as soon as the outcome is known", "[storage]") {
  QuorumTally tally(5, 3);
  CHECK(tally.outcome() == TallyOutcome::kUndecided);

  SECTION("three yes votes reach the quorum without waiting for the other two") {
    tally.record(0, Vote::kYes);
    tally.record(1, Vote::kYes);
    CHECK(tally.outcome() == TallyOutcome::kUndecided);
    tally.record(4, Vote::kYes);
    CHECK(tally.outcome() == TallyOutcome::kReached);
    CHECK(tally.pending() == 2);
  }
  SECTION("three failures make the quorum impossible at once") {
    tally.record(0, Vote::kFailed);
    tally.record(1, Vote::kNo);
    CHECK(tally.outcome() == TallyOutcome::kUndecided);
    tally.record(2, Vote::kFailed);
    CHECK(tally.outcome() == TallyOutcome::kImpossible);
    CHECK(tally.answered_voters() == 1);
  }
  SECTION("a decided tally stays decided") {
    tally.record(0, Vote::kNo);
    tally.record(1, Vote::kNo);
    tally.record(2, Vote::kNo);
    REQUIRE(tally.outcome() == TallyOutcome::kImpossible);
    tally.record(3, Vote::kYes);
    tally.record(4, Vote::kYes);
    CHECK(tally.outcome() == TallyOutcome::kImpossible);
  }
  SECTION("only a node's first answer counts") {
    tally.record(0, Vote::kYes);
    tally.record(0, Vote::kYes);
    tally.record(0, Vote::kYes);
    CHECK(tally.yes_votes() == 1);
    CHECK(tally.outcome() == TallyOutcome::kUndecided);
  }
}

TEST_CASE("an excluded node's answers never count toward the quorum", "[storage]") {
  QuorumTally tally(5, 3);
  tally.exclude(0);
  tally.exclude(1);
  tally.record(0, Vote::kYes);
  tally.record(1, Vote::kYes);
  tally.record(2, Vote::kYes);
  CHECK(tally.yes_votes() == 1);
  CHECK(tally.outcome() == TallyOutcome::kUndecided);

  SECTION("the remaining voters can still reach it together") {
    tally.record(3, Vote::kYes);
    tally.record(4, Vote::kYes);
    CHECK(tally.outcome() == TallyOutcome::kReached);
  }
  SECTION("one refusal among the remaining voters makes it impossible") {
    tally.record(3, Vote::kNo);
    CHECK(tally.outcome() == TallyOutcome::kImpossible);
  }
  SECTION("excluding after a yes takes the vote back") {
    QuorumTally late(3, 2);
    late.record(0, Vote::kYes);
    late.exclude(0);
    CHECK(late.yes_votes() == 0);
  }
}

TEST_CASE("with three of five nodes excluded no quorum is possible", "[storage]") {
  QuorumTally tally(5, 3);
  tally.exclude(0);
  tally.exclude(1);
  tally.exclude(2);
  CHECK(tally.outcome() == TallyOutcome::kImpossible);
}

TEST_CASE("a tally refuses impossible shapes", "[storage]") {
  CHECK_THROWS_AS(QuorumTally(0, 1), std::invalid_argument);
  CHECK_THROWS_AS(QuorumTally(3, 4), std::invalid_argument);
  CHECK_THROWS_AS(QuorumTally(3, 0), std::invalid_argument);
}

TEST_CASE("a tally tells an unavailable cluster from a held lock", "[storage]") {
  SECTION("refusals from a quorum of answering nodes: held by someone else") {
    QuorumTally tally(5, 3);
    tally.record(0, Vote::kNo);
    tally.record(1, Vote::kNo);
    tally.record(2, Vote::kNo);
    CHECK(tally.outcome() == TallyOutcome::kImpossible);
    CHECK_FALSE(tally.unavailable());
  }
  SECTION("three failures of five: unavailable, whatever the others say") {
    QuorumTally tally(5, 3);
    tally.record(0, Vote::kFailed);
    tally.record(1, Vote::kFailed);
    tally.record(2, Vote::kFailed);
    CHECK(tally.unavailable());
  }
  SECTION("excluded nodes count as unusable") {
    QuorumTally tally(5, 3);
    tally.exclude(0);
    tally.exclude(1);
    tally.record(2, Vote::kFailed);
    CHECK(tally.unavailable());
    CHECK(tally.unusable() == 3);
  }
  SECTION("two failures and a refusal: locked, the refusal decided it") {
    QuorumTally tally(5, 3);
    tally.record(0, Vote::kFailed);
    tally.record(1, Vote::kFailed);
    tally.record(2, Vote::kNo);
    CHECK(tally.outcome() == TallyOutcome::kImpossible);
    CHECK_FALSE(tally.unavailable());
  }
}

TEST_CASE("an unavailable tally says how many nodes can vote, not how many answered so far",
          "[storage]") {
  // Three of five paused: their connections fail first, before the two others answer.
  QuorumTally paused(5, 3);
  for (std::size_t node = 0; node < 3; ++node) paused.record(node, Vote::kFailed);
  CHECK(paused.outcome() == TallyOutcome::kImpossible);
  CHECK(paused.shortfall() ==
        "only 2 of 5 lock nodes can vote (3 failed or unreachable); a quorum of 3 is needed");
  QuorumTally quarantined(5, 3);
  quarantined.exclude(3);
  quarantined.exclude(4);
  quarantined.record(0, Vote::kFailed);
  CHECK(quarantined.shortfall() ==
        "only 2 of 5 lock nodes can vote (1 failed or unreachable, 2 quarantined or refused); "
        "a quorum of 3 is needed");
}
