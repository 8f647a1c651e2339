// Restarted-node quarantine: the distlock page's "delayed restart", enforced by the engine.
//
// A Redis node that restarts without (or with lagging) persistence comes back without the keys
// it held, so a second client could win a quorum that includes it while the first lease is still
// valid on the other nodes. The page asks operators to keep a crashed node down for at least the
// maximum ttl; instead, the engine notices the restart (the node's run_id changed across a
// reconnect) and does not count that node's votes until the window — max ttl plus drift — has
// passed on the engine's steady clock. By then every lease the node could have forgotten has
// expired everywhere.
//
// Limits: only restarts this engine observes are caught. A node first seen after it restarted
// (fencelockd itself restarting at the same time) is trusted at once.
// Pure logic with injected time; not thread-safe (the engine uses it on its strand).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace fencelock::storage {

class QuarantineTracker {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // `window`: how long a restarted node stays out of the quorum. `enabled` false: never quarantine.
  QuarantineTracker(std::size_t node_count, std::chrono::steady_clock::duration window, bool enabled);

  // A node finished a handshake and reported `run_id`. Returns true if that starts a quarantine
  // (a run_id different from the last one seen for the node).
  bool observe(std::size_t node, std::string_view run_id, TimePoint now);

  bool quarantined(std::size_t node, TimePoint now) const;
  TimePoint quarantined_until(std::size_t node) const { return until_.at(node); }

 private:
  std::vector<std::string> run_ids_;
  std::vector<TimePoint> until_;
  std::chrono::steady_clock::duration window_;
  bool enabled_;
};

}  // namespace fencelock::storage
