// Which lock nodes may vote: the restarted-node quarantine, made to hold across fencelockd
// instances and their restarts.
//
// A Redis node that restarts without (or with lagging) persistence comes back without keys it
// acknowledged, so a second client could win a quorum that includes it while the first lease is
// still valid on the other nodes. The distlock page asks operators to keep a crashed node down for
// the longest ttl; fencelock enforces it instead. An engine lets a node vote only when it can show
// the node has not lost keys that a live lease may hold — one of:
//
//   1. Durable: the node runs appendonly yes + appendfsync always (read at every handshake) AND
//      its marker survived (names an admitted run_id of any incarnation): it never loses an
//      acknowledged write, so a restart costs nothing. Durable config alone is not proof — a node
//      that ran without persistence and restarted with it on lost its keys and its marker with
//      them, so it is quarantined like any other.
//   2. Admitted in this incarnation: the node's marker (a hash the nodes keep, lua_scripts.h) names
//      the node's current run_id, which some engine wrote when it let this incarnation vote.
//   3. Up long enough: the node's own uptime (INFO server) is at least the window — the longest
//      ttl any instance may grant, plus drift. Every engine raises a max-ttl field in the marker of
//      every node it meets to its own --max-ttl, and uses the largest value it has seen, so
//      instances with different --max-ttl never undercut each other. Until the engine has read a
//      marker that kept its history (one with an admitted run_id, of any incarnation), it cannot
//      know that largest value and assumes the bound of all bounds (24 h).
//   4. A new cluster: every configured node answered and no marker names any admitted run_id.
//      Nothing was ever granted on these nodes, so all are admitted at once (a cold start is not
//      a 24 h wait).
//   Otherwise the node is quarantined until 3 holds. A restart the engine saw itself (the run_id
//   changed across a reconnect) also starts the window from that moment (at least as long as the
//   uptime says).
//
// Whenever a node starts to vote, the engine records its run_id as admitted on that node, so a
// freshly started instance trusts it too (rule 2) — and a node that later loses its data loses the
// record with it.
//
// Limits: a node that loses data without restarting (FLUSHALL, a replica resync) is not noticed.
// Durability is read at the handshake, so a node whose persistence is switched off at runtime
// (CONFIG SET appendonly no) after its marker was persisted, and which then crashes and restarts
// durable, keeps the marker but not the later lock writes: run nodes with a fixed config.
// If every node loses its data at once — or one after another with no engine admitting the
// earlier ones in between (a node is admitted only when its quarantine ends) — an engine that did
// not see them restart cannot tell the cluster from a new one (rule 4). Uptime is counted by the
// node's clock: a forward jump on a node ends its quarantine early, as it would expire its keys
// early anyway.
//
// Pure logic with injected time; not thread-safe (the engine uses it on its strand).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace fencelock::storage {

class NodeTrust {
 public:
  using Clock = std::chrono::steady_clock;

  struct Settings {
    std::chrono::milliseconds max_ttl{3'600'000};  // this engine's longest grant
    double drift_factor = 0.01;
    bool enabled = true;  // false: every node votes as soon as it answers
  };

  // What one handshake showed.
  struct Handshake {
    std::string run_id;
    std::chrono::seconds uptime{0};  // uptime_in_seconds, as INFO says (may overstate by < 1 s)
    bool durable = false;
    std::string admitted;                         // the marker's admitted run_id; "" when none
    std::chrono::milliseconds marked_max_ttl{0};  // the marker's max ttl, ours merged in
  };

  // The longest ttl any engine may grant, when nothing better is known.
  static constexpr std::chrono::milliseconds kTtlBound{86'400'000};

  NodeTrust(std::size_t node_count, Settings settings);

  // Records node `node`'s handshake at `now`. Returns the nodes that may vote from now on and did
  // not before (this one, or every node at a cluster's birth): record them as admitted.
  std::vector<std::size_t> observe(std::size_t node, const Handshake& handshake,
                                   Clock::time_point now);

  // Nodes whose quarantine has ended by `now` (and were not trusted yet): record them as admitted.
  std::vector<std::size_t> refresh(Clock::time_point now);

  bool voting(std::size_t node, Clock::time_point now) const;
  // When a quarantined node's quarantine ends (as known now); nullopt when it votes or was never
  // seen.
  std::optional<Clock::time_point> quarantined_until(std::size_t node) const;
  const std::string& run_id(std::size_t node) const { return nodes_.at(node).run_id; }

  // The window a restarted node waits out: the longest ttl any engine may grant (as known) plus
  // drift, rounded up.
  std::chrono::microseconds window() const;

 private:
  struct Node {
    bool seen = false;
    bool trusted = false;
    std::string run_id;
    std::string admitted;
    Clock::time_point suspect_since{};  // when it may have lost its keys, at the latest
  };

  bool birth_possible() const;
  void admit(std::size_t node);

  std::vector<Node> nodes_;
  Settings settings_;
  std::chrono::milliseconds longest_ttl_;
  bool history_seen_ = false;  // some marker named an admitted run_id
};

}  // namespace fencelock::storage
