#include "engine/node_trust.h"

#include <algorithm>

#include "fencelock/storage/lease_timing.h"

namespace fencelock::storage {

NodeTrust::NodeTrust(std::size_t node_count, Settings settings)
    : nodes_(node_count), settings_(settings), longest_ttl_(settings.max_ttl) {}

std::chrono::microseconds NodeTrust::window() const {
  // Until some marker kept its history, the largest --max-ttl in use is unknown.
  const std::chrono::milliseconds ttl =
      history_seen_ ? longest_ttl_ : std::max(longest_ttl_, kTtlBound);
  return std::chrono::duration_cast<std::chrono::microseconds>(ttl) +
         drift_allowance(ttl, settings_.drift_factor);
}

std::vector<std::size_t> NodeTrust::observe(std::size_t node, const Handshake& handshake,
                                            Clock::time_point now) {
  Node& n = nodes_.at(node);
  const bool restarted = n.seen && n.run_id != handshake.run_id;
  if (restarted || !n.seen) n.trusted = false;
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
  if (!handshake.admitted.empty()) history_seen_ = true;

  std::vector<std::size_t> admitted;
  if (n.trusted) return admitted;
  if (!settings_.enabled) {  // trusted here only: never recorded for other engines to rely on
    n.trusted = true;
    return admitted;
  }
  // Durable now is not enough: a node may have run without persistence when it took the writes
  // it lost and restart with it on. A durable node kept its data only if it kept its marker (the
  // marker, like every lock key, lives in the same dataset); one that lost the marker waits out
  // its quarantine or is admitted with a newborn cluster, like any node.
  const bool kept_history = !handshake.admitted.empty();
  if ((handshake.durable && kept_history) || handshake.admitted == handshake.run_id) {
    if (handshake.admitted != handshake.run_id) admitted.push_back(node);
    admit(node);
    return admitted;
  }
  if (birth_possible()) {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (!nodes_[i].trusted) {
        admit(i);
        admitted.push_back(i);
      }
    }
    return admitted;
  }
  return refresh(now);
}

void NodeTrust::admit(std::size_t node) {
  // The caller records the admission on the node: from now on this cluster has a history.
  Node& n = nodes_[node];
  n.trusted = true;
  n.admitted = n.run_id;
  history_seen_ = true;
}

std::vector<std::size_t> NodeTrust::refresh(Clock::time_point now) {
  std::vector<std::size_t> admitted;
  const auto window_now = window();
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    if (n.seen && !n.trusted && now >= n.suspect_since + window_now) {
      admit(i);
      admitted.push_back(i);
    }
  }
  return admitted;
}

bool NodeTrust::birth_possible() const {
  if (history_seen_) return false;
  return std::all_of(nodes_.begin(), nodes_.end(),
                     [](const Node& n) { return n.seen && n.admitted.empty(); });
}

bool NodeTrust::voting(std::size_t node, Clock::time_point now) const {
  const Node& n = nodes_.at(node);
  return n.seen && (n.trusted || now >= n.suspect_since + window());
}

std::optional<NodeTrust::Clock::time_point> NodeTrust::quarantined_until(std::size_t node) const {
  const Node& n = nodes_.at(node);
  if (!n.seen || n.trusted) return std::nullopt;
  return n.suspect_since + window();
}

}  // namespace fencelock::storage
