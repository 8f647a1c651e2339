// Hooks for logs and metrics: node transitions and the per-node outcome of every operation.
// Called on the engine's strand: implementations must be cheap and must not block or call back
// into the engine synchronously. Every hook has an empty default.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fencelock/storage/quorum.h"
#include "fencelock/storage/result.h"

namespace fencelock::storage {

enum class OperationKind : std::uint8_t { kAcquire, kExtend, kRelease, kInspect };

struct OperationReport {
  OperationKind kind;
  // nullopt on success; a release that found the lease no longer held (it answers false) reports
  // kLeaseLost.
  std::optional<ErrorCode> error;
  std::chrono::steady_clock::duration elapsed;        // from the call to its completion
  std::uint32_t attempts = 1;                         // acquire: tries made within the wait budget
  std::vector<Vote> votes;                            // per node, of the last attempt
  std::chrono::steady_clock::duration token_draw{0};  // acquire: time spent drawing the token
};

class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  virtual void on_node_up(std::size_t /*node*/, const std::string& /*address*/,
                          const std::string& /*run_id*/) {}
  virtual void on_node_down(std::size_t /*node*/, const std::string& /*address*/,
                            const std::string& /*why*/) {}
  virtual void on_node_quarantined(std::size_t /*node*/, const std::string& /*address*/,
                                   std::chrono::milliseconds /*duration*/) {}
  // The node's current incarnation may have lost keys without a restart its uptime shows (it
  // evicted, lost acknowledged writes, or restarted after running without durable persistence):
  // why. It waits out a quarantine (on_node_quarantined, when connected).
  virtual void on_node_lost_keys(std::size_t /*node*/, const std::string& /*address*/,
                                 const std::string& /*why*/) {}
  // The node answered but cannot be used (too old, scripts refused, may evict keys): why, once per
  // reason.
  virtual void on_node_refused(std::size_t /*node*/, const std::string& /*address*/,
                               const std::string& /*why*/) {}
  // The node's name did not resolve (or to no address): why, once per distinct reason. The node
  // is down and tries again with backoff.
  virtual void on_node_unresolved(std::size_t /*node*/, const std::string& /*address*/,
                                  const std::string& /*why*/) {}
  // A new connection to the node reached another IP address than the previous one (its name now
  // resolves elsewhere): the IP:port before and now.
  virtual void on_node_address_changed(std::size_t /*node*/, const std::string& /*address*/,
                                       const std::string& /*from*/, const std::string& /*to*/) {}
  virtual void on_operation(const OperationReport& /*report*/) {}
  // The engine found that its token store went back (a restored backup) and refuses every grant
  // from now on: why. Once per engine.
  virtual void on_grants_refused_for_good(const std::string& /*why*/) {}
};

}  // namespace fencelock::storage
