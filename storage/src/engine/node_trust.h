// NodeTrust: which lock nodes may vote — the restarted-node quarantine, made to hold across
// fencelockd instances and their restarts. Pure logic with injected time; not thread-safe (the
// engine uses it on its strand).
//
// Contract: a node votes only when the engine can show it has not lost keys a live lease may hold:
//   1. durable (appendonly yes + appendfsync always) and its marker survived (it names an admitted
//      run_id of any incarnation);
//   2. its marker names its current run_id, admitted by an engine of this deployment (key prefix);
//   3. its uptime (or a restart the engine saw itself) covers window(): the longest ttl any
//      instance may grant — the largest max ttl ever read from a marker that kept its history,
//      24 h until one was read — plus drift;
//   4. a new cluster: every configured node answered, none names an admission, and the token store
//      has no history (new_lock_nodes waives the store's history, never a silent node).
// Otherwise it is quarantined until 3 holds; a node that looks new first waits, unjudged, up to
// twice kAdmissionWait for an admission another engine's birth may be writing. An incarnation that
// may have lost keys without a restart (evicted, lost acknowledged writes, seen without durable
// persistence) is suspect: only rule 3 applies, from when it could last lose keys. A node let in
// by rule 3, or suspect, has its fences missing and does not vote until fences_restored(). unsafe()
// nodes never vote. Whenever a node starts to vote, the engine records its admission on it.
//
// Why, and the limits (what no running engine saw is not noticed; uptime is the node's clock):
// docs/architecture.md, "Restarted-node quarantine" and "The fence".
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
    // The token store handed out tokens before (TokenSource::has_history), and the operator did
    // not say the lock nodes are new (EngineOptions::new_lock_nodes): rule 4 does not apply.
    bool store_has_history = false;
  };

  // What one handshake showed.
  struct Handshake {
    std::string run_id;
    std::chrono::seconds uptime{0};  // uptime_in_seconds, as INFO says (may overstate by < 1 s)
    bool durable = false;
    std::string admitted;                         // the marker's admitted run_id; "" when none
    std::chrono::milliseconds marked_max_ttl{0};  // the marker's max ttl, ours merged in
    std::string suspect;                          // the marker's suspect run_id; "" when none
    std::chrono::milliseconds suspect_age{0};     // how long ago that was recorded (node clock)
    // Lost acknowledged writes: holds an older registry entry of ours than we last wrote there, or
    // evicted keys no engine recorded (EngineCore::evicted_unseen).
    bool lost_writes = false;
    bool fences_missing = false;  // the marker records a loss of fences not repaired yet
    // The marker names an admission written by a version before admissions were per key prefix:
    // not trusted (rules 1, 2), but the marker kept the longest max ttl since (the window).
    bool legacy_admitted = false;
  };

  // The longest ttl any engine may grant, when nothing better is known.
  static constexpr std::chrono::milliseconds kTtlBound{86'400'000};

  NodeTrust(std::size_t node_count, Settings settings);

  // Records node `node`'s handshake at `now`. Returns the nodes that may vote from now on and did
  // not before (this one, or every node at a cluster's birth): record them as admitted.
  std::vector<std::size_t> observe(std::size_t node, const Handshake& handshake,
                                   Clock::time_point now);

  // A new read of the marker of node `node` in the incarnation observe() saw: judges an unjudged
  // node once its wait is over, takes in a suspect record written since (the wait moves), and
  // admits a quarantined, unsuspected node whose marker names its current run_id (rule 2).
  // Otherwise changes nothing. Returns what observe() returns.
  std::vector<std::size_t> reread(std::size_t node, const Handshake& handshake,
                                  Clock::time_point now);
  // Whether a new read of `node`'s marker could change its verdict: seen, not voting by the
  // rules, not unsafe.
  bool worth_rereading(std::size_t node) const;
  // Whether `node` waits for its verdict (kAdmissionWait): it does not vote meanwhile.
  bool unjudged(std::size_t node) const { return nodes_.at(node).unjudged; }
  // How long a node that looks new waits for an admission in flight before it is judged.
  static constexpr std::chrono::milliseconds kAdmissionWait{2000};

  // Judges the unjudged nodes that no reread() judged within kAdmissionWait after their wait
  // (quarantined, fences missing). Returns
  // the nodes whose quarantine has ended by `now` (and were not trusted yet): record them as
  // admitted.
  std::vector<std::size_t> refresh(Clock::time_point now);
  // Whether the nodes may still be born as a new cluster (rule 4) once every node has answered:
  // every node seen so far has no history, and none is suspect. False once a birth happened.
  bool awaiting_birth() const;

  // Node `node`, in incarnation `run_id`, runs settings under which it may drop keys (it is
  // refused): it does not vote, and its quarantine starts only when it is next seen without them.
  void unsafe(std::size_t node, const std::string& run_id, Clock::time_point now);
  // Node `node`, in incarnation `run_id`, lost acknowledged writes by `now`: quarantined from now.
  void lost_keys(std::size_t node, const std::string& run_id, Clock::time_point now);
  // A recheck found `node` in incarnation `run_id` not durable: its next restart is lossy.
  void not_durable(std::size_t node, const std::string& run_id);
  // Raises the longest ttl known to `ttl` (a marker's max ttl, read at any time). Never lowers it.
  // `majority`: `ttl` is the largest of markers that kept this deployment's history, read from a
  // majority of the nodes in one round: the longest ttl is known again after
  // forget_longest_ttl(). Returns true if the window grew or shrank.
  bool note_max_ttl(std::chrono::milliseconds ttl, bool majority);
  // This engine was out of touch with the nodes for longer than its registry entry lives: another
  // instance may have raised the longest ttl meanwhile without seeing this one, on a majority that
  // has any node this engine still reached only by chance. Until note_max_ttl(…, true), the
  // longest ttl is unknown (kTtlBound), whatever single markers or admissions say.
  void forget_longest_ttl();
  // Nodes whose current incarnation became suspect since the last call: record it on them.
  std::vector<std::size_t> take_suspects();
  // A node whose fences became missing and whose marker does not say so yet. `evident`: the node
  // showed it may have lost keys it kept its marker through (suspect, or refused as unsafe), so
  // every deployment admitted there lost them too; otherwise only this engine lacks proof.
  struct FenceLoss {
    std::size_t node = 0;
    bool evident = false;
    bool operator==(const FenceLoss&) const = default;
  };
  // The fence losses since the last call: record them on the nodes (the marker's fences_missing),
  // so that no engine — another one, or this one restarted — trusts the node by rule 1 or 2
  // before a strict repair clears it.
  std::vector<FenceLoss> take_fence_losses();

  // Whether `node`'s current incarnation may lack fences (above); it votes only once restored.
  bool fences_missing(std::size_t node) const { return nodes_.at(node).fences_missing; }
  // Grows each time fences_missing() is set: a repair started before a later loss restores
  // nothing.
  std::uint64_t fence_generation(std::size_t node) const {
    return nodes_.at(node).fence_generation;
  }
  // The fences were copied onto `node` by a repair that started at `generation` (ignored if the
  // node may have lost them again since, in this incarnation or another).
  void fences_restored(std::size_t node, std::uint64_t generation);

  // Rules 1–4, whatever fences_missing() says (the engine asks both).
  bool voting(std::size_t node, Clock::time_point now) const;
  // When a quarantined node's quarantine ends (as known now; time_point::max() while it is
  // unsafe); nullopt when it votes or was never seen.
  std::optional<Clock::time_point> quarantined_until(std::size_t node) const;
  const std::string& run_id(std::size_t node) const { return nodes_.at(node).run_id; }
  bool seen(std::size_t node) const { return nodes_.at(node).seen; }

  bool store_has_history() const { return settings_.store_has_history; }
  // The longest ttl any engine may grant, as known: the largest max ttl read from any marker (and
  // this engine's own), or kTtlBound until a marker that kept its history was read (again, after
  // forget_longest_ttl()).
  std::chrono::milliseconds longest_ttl() const;
  // The window a restarted node waits out: longest_ttl() plus drift, rounded up.
  std::chrono::microseconds window() const;

 private:
  struct Node {
    bool seen = false;
    bool trusted = false;
    std::string run_id;
    std::string admitted;
    Clock::time_point suspect_since{};  // when it may have lost its keys, at the latest
    std::string tainted;  // a suspect incarnation, until its quarantine ends (rules 1, 2, 4 off)
    bool unsafe = false;  // `tainted` was last seen with settings that may drop keys
    std::string not_durable;  // an incarnation seen without durable persistence
    bool record_suspect = false;
    std::string suspect_sent;  // the incarnation this engine last listed in take_suspects()
    bool record_fence_loss = false;
    bool fence_loss_evident = false;  // of the loss to record: FenceLoss::evident
    bool fences_missing = false;      // rule 3 or suspect: fences to copy back before it votes
    std::uint64_t fence_generation = 0;
    bool unjudged = false;  // looked new; judged once unjudged_until has passed
    Clock::time_point unjudged_until{};
  };

  bool birth_possible() const;
  // When the node may have lost keys, by the suspect record `handshake` read (another engine's,
  // or this one's); nullopt when the record says nothing (none, or waited out).
  std::optional<Clock::time_point> recorded_loss(const Handshake& handshake,
                                                 Clock::time_point now) const;
  // Admits every node not trusted yet (a birth).
  std::vector<std::size_t> admit_born();
  // What `handshake` (and, `lossy_restart`, the incarnation it ended) says about keys node `n`
  // may have lost: taints it, and asks for a suspect record that did not land to be sent again.
  void note_loss_evidence(Node& n, const Handshake& handshake, bool lossy_restart,
                          Clock::time_point now);
  void admit(std::size_t node);
  // The node's current incarnation may have lost keys as late as `since`; `record`: tell the
  // caller (take_suspects) to record it on the node.
  static void taint(Node& n, Clock::time_point since, bool record);
  // fences_missing, in a new generation; `evident`: FenceLoss::evident.
  static void lose_fences(Node& n, bool evident);

  std::vector<Node> nodes_;
  Settings settings_;
  std::chrono::milliseconds longest_ttl_;
  bool history_seen_ = false;  // some marker named an admitted run_id
  // longest_ttl_ covers every ttl granted so far: a marker with a history was read (or a node
  // admitted) since the start or the last forget_longest_ttl().
  bool ttl_known_ = false;
  bool ttl_forgotten_ = false;  // since forget_longest_ttl(), until a majority's markers say
};

}  // namespace fencelock::storage
