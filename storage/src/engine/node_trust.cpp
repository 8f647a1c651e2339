#include "engine/node_trust.h"

#include <algorithm>
#include <utility>

#include "fencelock/storage/lease_timing.h"

namespace fencelock::storage {

NodeTrust::NodeTrust(std::size_t node_count, Settings settings)
    : nodes_(node_count), settings_(settings), longest_ttl_(settings.max_ttl) {}

std::chrono::milliseconds NodeTrust::longest_ttl() const {
  // Until some marker kept its history, the largest --max-ttl in use is unknown.
  return ttl_known_ ? longest_ttl_ : std::max(longest_ttl_, kTtlBound);
}

std::chrono::microseconds NodeTrust::window() const {
  const std::chrono::milliseconds ttl = longest_ttl();
  return std::chrono::duration_cast<std::chrono::microseconds>(ttl) +
         drift_allowance(ttl, settings_.drift_factor);
}

std::vector<std::size_t> NodeTrust::observe(std::size_t node, const Handshake& handshake,
                                            Clock::time_point now) {
  Node& n = nodes_.at(node);
  const bool restarted = n.seen && n.run_id != handshake.run_id;
  const bool first_look = !n.seen;
  // The incarnation that ended ran without durable persistence at some point, or had lost keys and
  // not waited them out: what it lost is lost to the new one too, whatever its config says.
  const bool lossy_restart = restarted && (n.run_id == n.not_durable || n.run_id == n.tainted);
  if (restarted || !n.seen) {
    n.trusted = false;
    n.unjudged = false;
  }
  // Restarted at most `uptime` ago, and, if we saw it restart, no earlier than we noticed. Redis
  // counts uptime in whole seconds from a start time in whole seconds, so it can overstate the
  // truth by up to a second: take that second off (a shorter uptime only lengthens the wait).
  const Clock::duration uptime = std::max<Clock::duration>(
      handshake.uptime - std::chrono::seconds(1), Clock::duration::zero());
  Clock::time_point suspect = now - uptime;
  if (restarted) suspect = std::max(suspect, now);
  if (restarted || !n.seen) n.suspect_since = suspect;
  n.seen = true;
  n.run_id = handshake.run_id;
  n.admitted = handshake.admitted;
  longest_ttl_ = std::max({longest_ttl_, handshake.marked_max_ttl, settings_.max_ttl});
  if (!handshake.admitted.empty() || handshake.legacy_admitted) {
    history_seen_ = true;
    ttl_known_ = ttl_known_ || !ttl_forgotten_;
  }
  if (!handshake.durable) n.not_durable = handshake.run_id;

  if (settings_.enabled) note_loss_evidence(n, handshake, lossy_restart, now);

  std::vector<std::size_t> admitted;
  if (n.trusted) return admitted;
  if (!settings_.enabled) {  // trusted here only: never recorded for other engines to rely on
    n.trusted = true;
    return admitted;
  }
  // Durable now is not enough: a node may have run without persistence when it took the writes
  // it lost and restart with it on. A durable node kept its data only if it kept its marker (the
  // marker, like every lock key, lives in the same dataset); one that lost the marker waits out
  // its quarantine or is admitted with a newborn cluster, like any node. A suspect incarnation
  // waits out its quarantine whatever it shows.
  const bool kept_history = !handshake.admitted.empty();
  const bool suspect_now = n.tainted == n.run_id;
  if (!suspect_now &&
      ((handshake.durable && kept_history) || handshake.admitted == handshake.run_id)) {
    admit(node);
    // Admitted in this incarnation: recorded only after its fences were back. Durable with its
    // marker: it lost nothing since — unless it had lost its fences before (a restart while they
    // were being copied back), which a restart does not bring back and the marker records.
    if (handshake.fences_missing) {
      if (!n.fences_missing) lose_fences(n, /*evident=*/false);
      n.record_fence_loss = false;  // recorded already
    } else if (handshake.admitted == handshake.run_id) {
      n.fences_missing = false;
    }
    // Listed to be recorded — or, with its fences missing, repaired first (the caller does that).
    if (handshake.admitted != handshake.run_id || n.fences_missing) admitted.push_back(node);
    return admitted;
  }
  if (birth_possible()) return admit_born();
  const bool looks_new = handshake.admitted.empty() && !handshake.legacy_admitted && !suspect_now &&
                         !store_has_history();
  if (looks_new && (restarted || first_look)) {
    n.unjudged = true;
    n.unjudged_until = now + kAdmissionWait;
  }
  if (looks_new && n.unjudged && now < n.unjudged_until) return admitted;
  n.unjudged = false;
  // Admitted, if ever, by the window: it may have lost its fences. Evident when it is suspect, or
  // kept a marker through a restart without durable persistence (it may have lost what came
  // after); a node this deployment has no record on only lacks proof.
  lose_fences(n, /*evident=*/suspect_now || kept_history);
  return refresh(now);
}

std::vector<std::size_t> NodeTrust::reread(std::size_t node, const Handshake& handshake,
                                           Clock::time_point now) {
  Node& n = nodes_.at(node);
  if (!worth_rereading(node) || n.run_id != handshake.run_id) return {};
  if (n.unjudged) return observe(node, handshake, now);
  // A loss some engine recorded since this engine's handshake (the review: a fresh instance read
  // the node just before another recorded it, and granted over a live lease): as at a
  // handshake, not recorded again — and only when it moves the wait, since every taint starts a
  // new fence generation (a repair under way would restore nothing).
  if (const auto since = recorded_loss(handshake, now);
      since && (n.tainted != n.run_id || *since > n.suspect_since)) {
    taint(n, *since, false);
    return {};
  }
  if (n.tainted == n.run_id || handshake.admitted != handshake.run_id) return {};
  return observe(node, handshake, now);  // rule 2
}

std::optional<NodeTrust::Clock::time_point> NodeTrust::recorded_loss(const Handshake& handshake,
                                                                     Clock::time_point now) const {
  // Recorded by some engine (maybe this one): it waits from then, and is not recorded again
  // (that would move the end of every engine's wait on each reconnect). A record of an earlier
  // incarnation younger than the window counts too: a restart, even a durable one, does not
  // bring back what that incarnation lost (the in-memory lossy_restart, for every engine). A
  // record of this incarnation older than the window, on a node admitted for this deployment
  // in this incarnation with no fence loss recorded, was waited out and repaired already (a
  // loss is recorded for every admitted deployment before the suspect record): not again.
  const bool waited_out = handshake.suspect == handshake.run_id &&
                          handshake.suspect_age >= window() &&
                          handshake.admitted == handshake.run_id && !handshake.fences_missing;
  if (!waited_out && (handshake.suspect == handshake.run_id ||
                      (!handshake.suspect.empty() && handshake.suspect_age < window())))
    return now - handshake.suspect_age;
  return std::nullopt;
}

bool NodeTrust::worth_rereading(std::size_t node) const {
  const Node& n = nodes_.at(node);
  return settings_.enabled && n.seen && !n.trusted && !n.unsafe;
}

void NodeTrust::note_loss_evidence(Node& n, const Handshake& handshake, bool lossy_restart,
                                   Clock::time_point now) {
  // Refused as unsafe since it was last seen (in this incarnation or the one it restarted
  // from): seen safe at last, it may have dropped keys until now.
  const bool was_unsafe = std::exchange(n.unsafe, false);
  if (lossy_restart || was_unsafe || handshake.lost_writes) taint(n, now, /*record=*/true);
  if (const auto since = recorded_loss(handshake, now)) taint(n, *since, false);
  // This engine recorded this incarnation as suspect, and the record is not there: the write
  // was lost with a connection. Again.
  if (n.tainted == n.run_id && n.suspect_sent == n.run_id && handshake.suspect != n.run_id)
    n.record_suspect = true;
}

void NodeTrust::taint(Node& n, Clock::time_point since, bool record) {
  n.tainted = n.run_id;
  n.trusted = false;
  n.unjudged = false;  // judged: suspect
  lose_fences(n, /*evident=*/true);
  n.suspect_since = std::max(n.suspect_since, since);
  n.record_suspect = n.record_suspect || record;
}

void NodeTrust::unsafe(std::size_t node, const std::string& run_id, Clock::time_point now) {
  if (!settings_.enabled) return;
  Node& n = nodes_.at(node);
  n.tainted = run_id;
  n.unsafe = true;
  n.trusted = false;
  n.unjudged = false;                // judged: refused
  lose_fences(n, /*evident=*/true);  // it may evict fences too
  if (n.seen && n.run_id == run_id) n.suspect_since = std::max(n.suspect_since, now);
}

void NodeTrust::lost_keys(std::size_t node, const std::string& run_id, Clock::time_point now) {
  Node& n = nodes_.at(node);
  if (!settings_.enabled || !n.seen || n.run_id != run_id) return;
  taint(n, now, /*record=*/true);
}

void NodeTrust::not_durable(std::size_t node, const std::string& run_id) {
  Node& n = nodes_.at(node);
  if (n.seen && n.run_id == run_id) n.not_durable = run_id;
}

bool NodeTrust::note_max_ttl(std::chrono::milliseconds ttl, bool majority) {
  const auto before = window();
  longest_ttl_ = std::max(longest_ttl_, ttl);
  if (majority) {
    ttl_known_ = true;
    ttl_forgotten_ = false;
  }
  return window() != before;
}

void NodeTrust::forget_longest_ttl() {
  ttl_known_ = false;
  ttl_forgotten_ = true;
}

std::vector<NodeTrust::FenceLoss> NodeTrust::take_fence_losses() {
  std::vector<FenceLoss> losses;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const bool evident = std::exchange(nodes_[i].fence_loss_evident, false);
    if (std::exchange(nodes_[i].record_fence_loss, false) && nodes_[i].fences_missing)
      losses.push_back({i, evident});
  }
  return losses;
}

std::vector<std::size_t> NodeTrust::take_suspects() {
  std::vector<std::size_t> suspects;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (std::exchange(nodes_[i].record_suspect, false)) {
      nodes_[i].suspect_sent = nodes_[i].run_id;
      suspects.push_back(i);
    }
  }
  return suspects;
}

void NodeTrust::admit(std::size_t node) {
  // The caller records the admission on the node: from now on this cluster has a history.
  Node& n = nodes_[node];
  n.trusted = true;
  n.unjudged = false;
  n.admitted = n.run_id;
  n.tainted.clear();  // it waited out whatever it may have lost
  history_seen_ = true;
  ttl_known_ = ttl_known_ || !ttl_forgotten_;
}

std::vector<std::size_t> NodeTrust::admit_born() {
  std::vector<std::size_t> admitted;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i].trusted) {
      admit(i);
      nodes_[i].fences_missing = false;
      admitted.push_back(i);
    }
  }
  return admitted;
}

std::vector<std::size_t> NodeTrust::refresh(Clock::time_point now) {
  std::vector<std::size_t> admitted;
  const auto window_now = window();
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    // No read since the wait ended judged it (the node's rechecks stopped): judged as it looked.
    if (n.unjudged && now >= n.unjudged_until + kAdmissionWait) {
      n.unjudged = false;
      lose_fences(n, /*evident=*/false);
    }
    if (n.seen && !n.trusted && !n.unsafe && !n.unjudged && now >= n.suspect_since + window_now) {
      admit(i);
      admitted.push_back(i);
    }
  }
  return admitted;
}

bool NodeTrust::awaiting_birth() const {
  if (!settings_.enabled || history_seen_ || store_has_history()) return false;
  // A suspect node means the cluster had a history, whatever the markers say.
  return std::all_of(nodes_.begin(), nodes_.end(), [](const Node& n) {
    return !n.seen || (n.admitted.empty() && n.tainted.empty());
  });
}

bool NodeTrust::birth_possible() const {
  return awaiting_birth() &&
         std::all_of(nodes_.begin(), nodes_.end(), [](const Node& n) { return n.seen; });
}

void NodeTrust::lose_fences(Node& n, bool evident) {
  n.fences_missing = true;
  n.record_fence_loss = true;
  n.fence_loss_evident = n.fence_loss_evident || evident;
  ++n.fence_generation;
}

void NodeTrust::fences_restored(std::size_t node, std::uint64_t generation) {
  Node& n = nodes_.at(node);
  if (n.fence_generation == generation) n.fences_missing = false;
}

bool NodeTrust::voting(std::size_t node, Clock::time_point now) const {
  const Node& n = nodes_.at(node);
  return n.seen && !n.unsafe && (n.trusted || (!n.unjudged && now >= n.suspect_since + window()));
}

std::optional<NodeTrust::Clock::time_point> NodeTrust::quarantined_until(std::size_t node) const {
  const Node& n = nodes_.at(node);
  if (!n.seen || n.trusted) return std::nullopt;
  if (n.unsafe) return Clock::time_point::max();
  if (n.unjudged) return n.unjudged_until + kAdmissionWait;  // refresh() judges it by then
  return n.suspect_since + window();
}

}  // namespace fencelock::storage
