// NodeTrust: which lock nodes may vote, with injected time (no Redis).
#include "engine/node_trust.h"

#include <catch2/catch.hpp>

#include "redis/redis_node.h"

using namespace std::chrono;
using fencelock::storage::NodeTrust;
using Handshake = NodeTrust::Handshake;

namespace {

const steady_clock::time_point t0{hours(100)};

NodeTrust::Settings settings(milliseconds max_ttl = seconds(60)) {
  return {max_ttl, 0.0, true};
}

Handshake node(std::string run_id, seconds uptime, std::string admitted = "",
               milliseconds marked = seconds(60), bool durable = false) {
  Handshake handshake;
  handshake.run_id = std::move(run_id);
  handshake.uptime = uptime;
  handshake.durable = durable;
  handshake.admitted = std::move(admitted);
  handshake.marked_max_ttl = marked;
  return handshake;
}

}  // namespace

TEST_CASE("a new cluster is admitted at once once every node has answered", "[storage]") {
  NodeTrust trust(3, settings());
  CHECK(trust.observe(0, node("a", 1s), t0).empty());
  CHECK_FALSE(trust.voting(0, t0));  // two nodes unheard: could be an old cluster's survivors
  CHECK(trust.observe(1, node("b", 1s), t0).empty());
  const auto admitted = trust.observe(2, node("c", 1s), t0);
  CHECK(admitted == std::vector<std::size_t>{0, 1, 2});
  for (std::size_t i = 0; i < 3; ++i) CHECK(trust.voting(i, t0));
}

// #33, and the two reviews of a majority birth on the operator's word (withdrawn): a node that
// never answers keeps a new cluster from being born, whatever the operator says and however long
// it takes — a node that lost its data cannot be told from a new one, and the silent one may hold
// what it lost. Until then the engine knows it is waiting for a birth (and says so).
TEST_CASE("a new cluster is born only once every node has answered, even on the operator's word",
          "[storage]") {
  NodeTrust trust(3, settings());  // the word only sets store_has_history false, as here
  CHECK(trust.observe(0, node("a", 1s), t0).empty());
  CHECK(trust.observe(1, node("b", 1s), t0 + 1s).empty());
  CHECK(trust.awaiting_birth());
  CHECK(trust.refresh(t0 + 1h).empty());
  CHECK_FALSE(trust.voting(0, t0 + 1h));
  CHECK(trust.observe(2, node("c", 1s), t0 + 1h) == std::vector<std::size_t>{0, 1, 2});
  CHECK_FALSE(trust.awaiting_birth());
}

TEST_CASE("a node with an admission or a suspect record ends the wait for a birth", "[storage]") {
  NodeTrust trust(3, settings());
  CHECK(trust.observe(0, node("a", 1s), t0).empty());
  CHECK(trust.awaiting_birth());
  CHECK(trust.observe(1, node("b", 1s, "x"), t0).empty());
  CHECK_FALSE(trust.awaiting_birth());  // a history: the nodes wait out the window
}

TEST_CASE("nodes without history are no new cluster while the token store has one", "[storage]") {
  NodeTrust::Settings with_history = settings();
  with_history.store_has_history = true;
  NodeTrust trust(3, with_history);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(trust.observe(i, node(std::string(1, static_cast<char>('a' + i)), 1s), t0).empty());
  }
  for (std::size_t i = 0; i < 3; ++i) CHECK_FALSE(trust.voting(i, t0));
  // No marker remembers the longest max ttl: the bound of all bounds, then each node by rule 3.
  CHECK(*trust.quarantined_until(0) >= t0 + NodeTrust::kTtlBound);
  CHECK(trust.refresh(t0 + NodeTrust::kTtlBound - 1s).empty());
  CHECK(trust.refresh(t0 + NodeTrust::kTtlBound + 1s) == std::vector<std::size_t>{0, 1, 2});
}

TEST_CASE("a node admitted in its current incarnation votes at once, for any new engine",
          "[storage]") {
  NodeTrust trust(3, settings());
  CHECK(trust.observe(0, node("a", 1s, "a"), t0).empty());  // already recorded: nothing to write
  CHECK(trust.voting(0, t0));
}

TEST_CASE("a node that lost its data waits out the window from its restart, by its uptime",
          "[storage]") {
  NodeTrust trust(3, settings(seconds(60)));
  trust.observe(0, node("a", hours(5), "a"), t0);
  trust.observe(1, node("b", hours(5), "b"), t0);
  // Restarted 10 s ago without persistence: its marker is gone.
  CHECK(trust.observe(2, node("c2", 10s, "", milliseconds(0)), t0).empty());
  CHECK_FALSE(trust.voting(2, t0));
  // It looks new: another engine's birth may be writing its admission. Judged after the wait.
  CHECK(trust.unjudged(2));
  CHECK(*trust.quarantined_until(2) == t0 + 2 * NodeTrust::kAdmissionWait);
  CHECK(trust.refresh(t0 + 2 * NodeTrust::kAdmissionWait).empty());
  CHECK_FALSE(trust.unjudged(2));
  // Redis's whole-second uptime may overstate by up to a second: one is taken off.
  CHECK(*trust.quarantined_until(2) == t0 - 9s + seconds(60) + milliseconds(2));
  CHECK_FALSE(trust.voting(2, t0 + 51s));
  CHECK(trust.voting(2, t0 + 52s));
  CHECK(trust.refresh(t0 + 52s) == std::vector<std::size_t>{2});
  CHECK_FALSE(trust.quarantined_until(2).has_value());
}

TEST_CASE("a node up for longer than the window votes once some marker kept its history",
          "[storage]") {
  NodeTrust trust(3, settings(seconds(60)));
  CHECK(trust.observe(0, node("a", hours(5)), t0).empty());  // no history seen: 24 h assumed
  CHECK_FALSE(trust.voting(0, t0));
  CHECK(trust.observe(1, node("b", hours(5), "b-old"), t0) == std::vector<std::size_t>{1});
  CHECK(trust.voting(1, t0));
  CHECK_FALSE(trust.voting(0, t0));  // no admission of its own: it waits for one in flight
  CHECK(trust.refresh(t0 + 2 * NodeTrust::kAdmissionWait) == std::vector<std::size_t>{0});
  CHECK(trust.voting(0, t0 + 2 * NodeTrust::kAdmissionWait));
}

TEST_CASE("a restart the engine saw itself starts the window no earlier than it saw it",
          "[storage]") {
  NodeTrust trust(1, settings(seconds(60)));
  trust.observe(0, node("a", hours(5), "a"), t0);
  CHECK(trust.voting(0, t0));
  // The node says it has been up for an hour (a clock jump, say); the engine saw it restart now.
  CHECK(trust.observe(0, node("a2", hours(1), "a"), t0 + 1s).empty());
  CHECK_FALSE(trust.voting(0, t0 + 30s));
  CHECK(trust.voting(0, t0 + 62s));
}

TEST_CASE("a durable node that kept its marker is never quarantined", "[storage]") {
  NodeTrust trust(3, settings());
  trust.observe(0, node("a", hours(5), "a"), t0);
  CHECK(trust.observe(1, node("b2", 1s, "b", seconds(60), /*durable=*/true), t0) ==
        std::vector<std::size_t>{1});
  CHECK(trust.voting(1, t0));
}

// Review of #12: a node ran without persistence, lost its keys in a restart and came back with
// appendfsync always. Its config is durable now; its data (and marker) are gone all the same.
TEST_CASE("a durable node that lost its marker is quarantined like any other", "[storage]") {
  NodeTrust trust(3, settings());
  trust.observe(0, node("a", hours(5), "a"), t0);
  CHECK(trust.observe(1, node("b2", 1s, "", seconds(60), /*durable=*/true), t0).empty());
  CHECK_FALSE(trust.voting(1, t0));
  CHECK(trust.refresh(t0 + 2 * NodeTrust::kAdmissionWait).empty());
  CHECK_FALSE(trust.voting(1, t0 + 2 * NodeTrust::kAdmissionWait));
  CHECK(trust.voting(1, t0 + 61s));
}

TEST_CASE("a newborn cluster of durable nodes votes at once", "[storage]") {
  NodeTrust trust(2, settings());
  CHECK(trust.observe(0, node("a", 1s, "", seconds(60), /*durable=*/true), t0).empty());
  CHECK(trust.observe(1, node("b", 1s, "", seconds(60), /*durable=*/true), t0) ==
        std::vector<std::size_t>{0, 1});
  CHECK(trust.voting(0, t0));
}

TEST_CASE("engines with different max ttls never undercut the longest window", "[storage]") {
  NodeTrust trust(3, settings(seconds(10)));                 // this engine grants 10 s at most
  trust.observe(0, node("a", hours(5), "a", hours(1)), t0);  // another engine's max ttl: 1 h
  trust.observe(1, node("b2", 30s, "", seconds(10)), t0);
  trust.refresh(t0 + 2 * NodeTrust::kAdmissionWait);
  CHECK_FALSE(
      trust.voting(1, t0 + 2 * NodeTrust::kAdmissionWait));  // 30 s would do for 10 s leases
  CHECK_FALSE(trust.voting(1, t0 + 30min));
  CHECK(trust.voting(1, t0 + 1h));
}

TEST_CASE("with quarantine off every node votes as soon as it answers, and nothing is recorded",
          "[storage]") {
  NodeTrust trust(2, NodeTrust::Settings{seconds(60), 0.0, false});
  CHECK(trust.observe(0, node("a", 1s), t0).empty());
  CHECK(trust.voting(0, t0));
  CHECK_FALSE(trust.voting(1, t0));  // never heard from
}

TEST_CASE("a Redis version is read as its major and minor numbers", "[storage]") {
  using fencelock::storage::parse_redis_version;
  CHECK(parse_redis_version("7.0.15") == std::make_pair(7, 0));
  CHECK(parse_redis_version("6.2") == std::make_pair(6, 2));
  CHECK(parse_redis_version("5.0.14") < std::make_pair(6, 0));
  CHECK_FALSE(parse_redis_version("").has_value());
  CHECK_FALSE(parse_redis_version("seven").has_value());
  CHECK_FALSE(parse_redis_version("7").has_value());
}

TEST_CASE("a node refused as unsafe waits out the window from when it is next seen safe",
          "[storage]") {
  NodeTrust trust(3, settings(seconds(60)));
  trust.observe(0, node("a", hours(5), "a"), t0);
  trust.observe(1, node("b", hours(5), "b"), t0);
  trust.observe(2, node("c", hours(5), "c"), t0);
  CHECK(trust.take_suspects().empty());
  trust.unsafe(2, "c", t0 + 1s);  // it may evict from now on
  CHECK_FALSE(trust.voting(2, t0 + 1s));
  CHECK(trust.quarantined_until(2) == steady_clock::time_point::max());
  CHECK(trust.refresh(t0 + 2h).empty());  // however long it stays unsafe
  // Seen safe an hour later: admitted in this incarnation, up for hours, and still quarantined.
  CHECK(trust.observe(2, node("c", hours(6), "c"), t0 + 1h).empty());
  CHECK(trust.take_suspects() == std::vector<std::size_t>{2});
  CHECK_FALSE(trust.voting(2, t0 + 1h + 59s));
  CHECK(trust.voting(2, t0 + 1h + 61s));
  CHECK(trust.refresh(t0 + 1h + 61s) == std::vector<std::size_t>{2});
}

TEST_CASE("a node that lost acknowledged writes is quarantined from then, durable or not",
          "[storage]") {
  NodeTrust trust(3, settings(seconds(60)));
  trust.observe(0, node("a", hours(5), "a"), t0);
  trust.observe(1, node("b", hours(5), "b"), t0);
  SECTION("noticed while connected (a FLUSHALL)") {
    trust.observe(2, node("c", hours(5), "c"), t0);
    trust.lost_keys(2, "c", t0 + 10s);
    CHECK_FALSE(trust.voting(2, t0 + 69s));
    CHECK(trust.voting(2, t0 + 71s));
  }
  SECTION("noticed at the handshake (restored from a backup)") {
    Handshake restored = node("c2", 5s, "c", seconds(60), /*durable=*/true);
    restored.lost_writes = true;
    CHECK(trust.observe(2, restored, t0).empty());  // rule 1 would trust it
    CHECK_FALSE(trust.voting(2, t0 + 59s));
    CHECK(trust.voting(2, t0 + 61s));
  }
  CHECK(trust.take_suspects() == std::vector<std::size_t>{2});
}

TEST_CASE("the restart of an incarnation seen without durable persistence is never lossless",
          "[storage]") {
  NodeTrust trust(3, settings(seconds(60)));
  trust.observe(0, node("a", hours(5), "a"), t0);
  trust.observe(1, node("b", hours(5), "b"), t0);
  trust.observe(2, node("c", hours(5), "c", seconds(60), /*durable=*/true), t0);
  trust.not_durable(2, "c");  // CONFIG SET appendonly no, then back: forever for this incarnation
  CHECK(trust.voting(2, t0 + 1s));
  // It restarts durable with its old marker: rule 1 would trust it at once.
  CHECK(trust.observe(2, node("c2", 1s, "c", seconds(60), /*durable=*/true), t0 + 10s).empty());
  CHECK(trust.take_suspects() == std::vector<std::size_t>{2});
  CHECK_FALSE(trust.voting(2, t0 + 69s));
  CHECK(trust.voting(2, t0 + 71s));
}

TEST_CASE("a suspect record on the node quarantines its incarnation for a fresh engine too",
          "[storage]") {
  NodeTrust trust(3, settings(seconds(60)));
  Handshake recorded = node("c", hours(5), "c", seconds(60), /*durable=*/true);
  recorded.suspect = "c";
  recorded.suspect_age = seconds(20);
  CHECK(trust.observe(2, recorded, t0).empty());
  CHECK(trust.take_suspects().empty());  // recorded already
  CHECK_FALSE(trust.voting(2, t0 + 39s));
  CHECK(trust.voting(2, t0 + 41s));
  // A young record of an earlier incarnation holds this one out too: a durable restart does not
  // bring back what that incarnation lost (the review's double grant: no instance saw the
  // restart, and rule 1 trusted the node). An old one says nothing.
  recorded.suspect = "older";
  CHECK(trust.observe(1, recorded, t0).empty());
  CHECK_FALSE(trust.voting(1, t0 + 39s));
  CHECK(trust.voting(1, t0 + 41s));
  recorded.suspect_age = seconds(61);
  CHECK(trust.observe(0, recorded, t0).empty());  // admitted in this incarnation already
  CHECK(trust.voting(0, t0));

  // A record of this incarnation older than the window, on a node this deployment admitted in
  // it since, with no fence loss recorded: waited out and repaired, not again on each handshake.
  NodeTrust later(3, settings(seconds(60)));
  Handshake waited = node("c", hours(5), "c", seconds(60), /*durable=*/true);
  waited.suspect = "c";
  waited.suspect_age = seconds(61);
  CHECK(later.observe(2, waited, t0).empty());
  CHECK(later.voting(2, t0));
  CHECK_FALSE(later.fences_missing(2));
  CHECK(later.take_fence_losses().empty());
  waited.fences_missing = true;  // unless a loss is still recorded: then its fences come first
  NodeTrust missing(3, settings(seconds(60)));
  CHECK(missing.observe(2, waited, t0) == std::vector<std::size_t>{2});
  CHECK(missing.fences_missing(2));
}

TEST_CASE("a suspect record this engine sent and the node does not hold is sent again",
          "[storage]") {
  NodeTrust trust(3, settings(seconds(60)));
  trust.observe(0, node("a", hours(5), "a"), t0);
  trust.lost_keys(0, "a", t0 + 1s);
  CHECK(trust.take_suspects() == std::vector<std::size_t>{0});
  // The connection dropped before the record landed; the node answers again, same incarnation.
  trust.observe(0, node("a", hours(5), "a"), t0 + 2s);
  CHECK(trust.take_suspects() == std::vector<std::size_t>{0});
  Handshake held = node("a", hours(5), "a");
  held.suspect = "a";
  held.suspect_age = seconds(2);
  trust.observe(0, held, t0 + 3s);  // it landed this time
  CHECK(trust.take_suspects().empty());
  // Its loss of fences is evident: every deployment admitted there is told.
  CHECK(trust.take_fence_losses() == std::vector<NodeTrust::FenceLoss>{{0, true}});
}

TEST_CASE("a longer max ttl read during a quarantine lengthens it, and is never lowered",
          "[storage]") {
  NodeTrust trust(3, settings(seconds(3)));
  trust.observe(0, node("a", hours(5), "a", seconds(3)), t0);
  trust.observe(1, node("b", hours(5), "b", seconds(3)), t0);
  trust.observe(2, node("c", 1s, "", seconds(3)), t0);  // restarted empty: its marker says 3 s
  CHECK(trust.note_max_ttl(hours(1), true));            // the survivors' markers: an hour
  CHECK_FALSE(trust.note_max_ttl(seconds(3), true));
  CHECK_FALSE(trust.voting(2, t0 + 10s));
  CHECK(trust.refresh(t0 + 10s).empty());
  CHECK(trust.voting(2, t0 + 1h + 1s));
}

// Review of the --max-ttl change (F1): an engine paused for longer than its registry entry lives
// is invisible to an instance that starts meanwhile with a longer --max-ttl, grants, and dies;
// if every node then restarts empty, what the paused engine knew is too short.
TEST_CASE("an engine that forgot the longest ttl waits the bound until a majority's markers say",
          "[storage]") {
  NodeTrust trust(3, settings(seconds(3)));
  trust.observe(0, node("a", hours(5), "a", seconds(3)), t0);
  CHECK(trust.longest_ttl() == seconds(3));
  trust.forget_longest_ttl();
  CHECK(trust.longest_ttl() == NodeTrust::kTtlBound);
  trust.observe(1, node("b", 1s, "", seconds(3)), t0);  // restarted empty: no history
  trust.refresh(t0 + 2 * NodeTrust::kAdmissionWait);
  CHECK_FALSE(trust.voting(1, t0 + 1h));
  CHECK(trust.note_max_ttl(seconds(3), false) == false);  // one marker
  // A marker that kept its history, alone (the review of the forget: a node the partitioned
  // engine still reached had been away from the one that granted longer), says nothing either.
  trust.observe(2, node("c", hours(5), "c", seconds(3)), t0);
  CHECK(trust.longest_ttl() == NodeTrust::kTtlBound);
  CHECK(trust.note_max_ttl(minutes(1), true));  // a majority's markers in one round
  CHECK(trust.longest_ttl() == minutes(1));
  CHECK(trust.voting(1, t0 + 62s));
}

TEST_CASE("a node admitted by the window may have lost its fences, one that kept its data did not",
          "[storage]") {
  NodeTrust trust(3, settings(seconds(60)));
  trust.observe(0, node("a", hours(5), "a"), t0);                                 // rule 2
  trust.observe(1, node("b", hours(5), "x", seconds(60), /*durable=*/true), t0);  // rule 1
  CHECK_FALSE(trust.fences_missing(0));
  CHECK_FALSE(trust.fences_missing(1));
  // Restarted empty 10 s ago: quarantined, and its fences are gone with its keys.
  trust.observe(2, node("c2", 10s, "", milliseconds(0)), t0);
  CHECK_FALSE(trust.fences_missing(2));  // not judged yet: an admission may be in flight
  CHECK(trust.refresh(t0 + 2 * NodeTrust::kAdmissionWait).empty());
  CHECK(trust.fences_missing(2));
  CHECK(trust.refresh(t0 + 52s) == std::vector<std::size_t>{2});
  CHECK(trust.fences_missing(2));  // the window ended; the fences are still to be copied back
  const auto generation = trust.fence_generation(2);
  trust.lost_keys(2, "c2", t0 + 53s);  // lost them again while a repair ran
  trust.fences_restored(2, generation);
  CHECK(trust.fences_missing(2));  // that repair restored nothing
  trust.fences_restored(2, trust.fence_generation(2));
  CHECK_FALSE(trust.fences_missing(2));
  // Up longer than the window but never admitted in this incarnation: it may have lost them too.
  NodeTrust later(3, settings(seconds(60)));
  later.observe(0, node("a", hours(5), "a"), t0);
  later.observe(1, node("b", hours(5), "b"), t0);
  CHECK(later.observe(2, node("c3", hours(5), "c2"), t0) == std::vector<std::size_t>{2});
  CHECK(later.fences_missing(2));
}

TEST_CASE("a new cluster's nodes have no fences to miss", "[storage]") {
  NodeTrust trust(3, settings());
  trust.observe(0, node("a", 1s), t0);
  trust.observe(1, node("b", 1s), t0);
  trust.observe(2, node("c", 1s), t0);
  for (std::size_t i = 0; i < 3; ++i) CHECK_FALSE(trust.fences_missing(i));
}

TEST_CASE("a loss of fences is recorded on the node, and a durable restart does not forget it",
          "[storage]") {
  NodeTrust trust(3, settings());
  trust.observe(0, node("a", hours(5), "a"), t0);
  trust.observe(1, node("b", hours(5), "b"), t0);
  trust.observe(2, node("c", hours(5), "c"), t0);
  CHECK(trust.take_fence_losses().empty());
  trust.lost_keys(0, "a", t0 + 1s);
  // Evident: the node kept its marker through the loss, so every deployment admitted there lost
  // its fences too (a window ending is no such evidence: below).
  CHECK(trust.take_fence_losses() == std::vector<NodeTrust::FenceLoss>{{0, true}});
  CHECK(trust.take_fence_losses().empty());  // once

  // Node 0 restarts durable during its repair: its marker kept `admitted` (an older incarnation)
  // and the recorded loss. Rule 1 lets it vote — once its fences are back, not before.
  Handshake restarted = node("a2", 1s, "a", seconds(60), /*durable=*/true);
  restarted.fences_missing = true;
  NodeTrust fresh(3, settings());
  CHECK(fresh.observe(0, restarted, t0) == std::vector<std::size_t>{0});  // to repair, then record
  CHECK(fresh.voting(0, t0));
  CHECK(fresh.fences_missing(0));
  CHECK(fresh.take_fence_losses().empty());  // recorded already
  fresh.fences_restored(0, fresh.fence_generation(0));
  CHECK_FALSE(fresh.fences_missing(0));
  // Without the record the same handshake is trusted whole (what the record is for).
  NodeTrust unaware(3, settings());
  CHECK(unaware.observe(0, node("a2", 1s, "a", seconds(60), true), t0) ==
        std::vector<std::size_t>{0});
  CHECK_FALSE(unaware.fences_missing(0));
  // A node without a record of this deployment only lacks proof: no loss for the others.
  NodeTrust newcomer(3, settings());
  newcomer.observe(0, node("a3", 1s, ""), t0);
  CHECK(newcomer.take_fence_losses().empty());  // judged after the wait
  newcomer.refresh(t0 + 2 * NodeTrust::kAdmissionWait);
  CHECK(newcomer.take_fence_losses() == std::vector<NodeTrust::FenceLoss>{{0, false}});
}

// The cold-start race of a cluster of instances: another engine's birth writes its admissions one
// node at a time, and this engine read some nodes before theirs landed. A node that looks new
// waits for its own admission before it is judged; quarantined for the window, it would keep this
// instance from ever being ready.
TEST_CASE("a node that looks new while others show admissions waits for its own in flight",
          "[storage]") {
  NodeTrust trust(3, settings(seconds(60)));
  const bool new_first = GENERATE(false, true);  // read before or after the admitted ones
  CAPTURE(new_first);
  if (new_first) CHECK(trust.observe(2, node("c", 1s), t0).empty());
  CHECK(trust.observe(0, node("a", 1s, "a"), t0) == std::vector<std::size_t>{});
  CHECK(trust.observe(1, node("b", 1s, "b"), t0) == std::vector<std::size_t>{});
  if (!new_first) CHECK(trust.observe(2, node("c", 1s), t0).empty());
  CHECK(trust.voting(0, t0));
  CHECK(trust.unjudged(2));
  CHECK_FALSE(trust.voting(2, t0));
  CHECK_FALSE(trust.fences_missing(2));
  CHECK(trust.take_fence_losses().empty());  // nothing recorded on it while it waits
  CHECK(trust.worth_rereading(2));
  CHECK(trust.reread(2, node("c", 1s), t0 + 1s).empty());  // not there yet
  CHECK(trust.unjudged(2));
  CHECK(trust.reread(2, node("c", 1s, "c"), t0 + 1500ms).empty());  // recorded already
  CHECK(trust.voting(2, t0 + 1500ms));
  CHECK_FALSE(trust.fences_missing(2));
  CHECK_FALSE(trust.quarantined_until(2).has_value());
  CHECK_FALSE(trust.worth_rereading(2));
}

TEST_CASE("a node whose admission never came is judged after the wait as it looked", "[storage]") {
  NodeTrust trust(3, settings(seconds(60)));
  trust.observe(0, node("a", hours(5), "a"), t0);
  trust.observe(1, node("b", hours(5), "b"), t0);
  trust.observe(2, node("c2", 10s, "", milliseconds(0)), t0);
  // A read after the wait judges it: quarantined from its restart, fences to copy back.
  CHECK(trust.reread(2, node("c2", 13s, "", milliseconds(0)), t0 + 3s).empty());
  CHECK_FALSE(trust.unjudged(2));
  CHECK(trust.fences_missing(2));
  CHECK(trust.take_fence_losses() == std::vector<NodeTrust::FenceLoss>{{2, false}});
  CHECK(*trust.quarantined_until(2) == t0 - 9s + seconds(60) + milliseconds(2));
  // Reread again with nothing new: nothing changes, nothing is recorded again.
  const auto generation = trust.fence_generation(2);
  CHECK(trust.reread(2, node("c2", 14s, "", milliseconds(0)), t0 + 4s).empty());
  CHECK(trust.fence_generation(2) == generation);
  CHECK(trust.take_fence_losses().empty());
  // Another engine admits it (its window ended there first, and its fences were copied back):
  // what a restart of this engine would trust, this one trusts on the next read.
  CHECK(trust.reread(2, node("c2", 20s, "c2"), t0 + 10s).empty());
  CHECK(trust.voting(2, t0 + 10s));
  CHECK_FALSE(trust.fences_missing(2));
  // Another incarnation's read is no news of this one.
  CHECK(trust.reread(2, node("c3", 1s, "c3"), t0 + 11s).empty());
}

TEST_CASE("a node refused as unsafe while it waits is judged: refused, not quarantined",
          "[storage]") {
  NodeTrust trust(3, settings(seconds(60)));
  trust.observe(0, node("a", hours(5), "a"), t0);
  trust.observe(2, node("c", 1s), t0);
  CHECK(trust.unjudged(2));
  trust.unsafe(2, "c", t0 + 1s);
  CHECK_FALSE(trust.unjudged(2));
  CHECK(*trust.quarantined_until(2) == steady_clock::time_point::max());
  CHECK_FALSE(trust.worth_rereading(2));
}

TEST_CASE("a suspect node is not admitted by a marker read again", "[storage]") {
  NodeTrust trust(3, settings(seconds(60)));
  trust.observe(0, node("a", hours(5), "a"), t0);
  trust.observe(1, node("b", hours(5), "b"), t0);
  trust.observe(2, node("c", hours(5), "c"), t0);
  trust.lost_keys(2, "c", t0 + 1s);  // this engine saw it lose keys
  CHECK_FALSE(trust.voting(2, t0 + 2s));
  CHECK(trust.reread(2, node("c", hours(5), "c"), t0 + 2s).empty());
  CHECK_FALSE(trust.voting(2, t0 + 2s));
  CHECK(trust.quarantined_until(2).has_value());
}

// The second review of the re-read: a fresh instance read a node just before another recorded
// that it lost keys (FLUSHALL while a lease was held), quarantined it only by its uptime, and
// granted over the live lease. A suspect record read later moves the wait, once.
TEST_CASE("a suspect record written after the handshake moves the wait when read again",
          "[storage]") {
  NodeTrust trust(3, settings(seconds(60)));
  trust.observe(0, node("a", hours(5), "a"), t0);
  trust.observe(1, node("b", hours(5), "b"), t0);
  Handshake c = node("c", 10s, "", milliseconds(0));
  trust.observe(2, c, t0);
  CHECK(trust.reread(2, c, t0 + 3s).empty());  // judged after the wait: by its uptime
  CHECK(*trust.quarantined_until(2) == t0 - 9s + seconds(60) + milliseconds(2));
  c.suspect = "c";
  c.suspect_age = 500ms;  // lost its keys at t0 + 3.5 s, by another engine's record
  CHECK(trust.reread(2, c, t0 + 4s).empty());
  CHECK(*trust.quarantined_until(2) == t0 + 3500ms + seconds(60) + milliseconds(2));
  const auto generation = trust.fence_generation(2);
  c.suspect_age = 1500ms;  // the same record, a second later
  CHECK(trust.reread(2, c, t0 + 5s).empty());
  CHECK(trust.fence_generation(2) == generation);  // no new loss: a repair under way stays valid
  CHECK_FALSE(trust.voting(2, t0 + 60s));
  // Another engine's admission of this incarnation does not end a suspect node's wait.
  c.admitted = "c";
  CHECK(trust.reread(2, c, t0 + 6s).empty());
  CHECK_FALSE(trust.voting(2, t0 + 6s));
}
