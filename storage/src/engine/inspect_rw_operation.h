// A read/write lock's status (LockEngine::inspect_rw): kInspectRwScript on every voting node
// (bounded by the node timeout), then the grants that a quorum holds.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/script_operation.h"
#include "fencelock/storage/lease.h"

namespace fencelock::storage {

// What a read/write lock's inspection learned: its status, and for listings which nodes hold each
// of its grants (one bit mask per grant, bit i: node i; in no particular order) and which nodes
// answered.
struct RwInspection {
  RwLockStatus status;
  std::vector<std::uint32_t> held_on;
  std::uint32_t answered = 0;
  // A grant the nodes which answered hold on fewer than a quorum could be held with those that
  // did not: `status` may leave it out (its status route answers kUnavailable instead).
  bool maybe_held = false;
};

class InspectRwOperation final : public ScriptOperation {
 public:
  // `name`: the read/write lock's name (its keys are derived from it).
  InspectRwOperation(const std::shared_ptr<EngineCore>& core, const std::string& name,
                     std::function<void(Result<RwInspection>)> done);

 private:
  struct Seen {
    RwMode mode = RwMode::kRead;
    std::string value;  // without a mark
    std::int64_t pttl = 0;
    std::size_t node = 0;
  };
  void on_answer(std::size_t node, const NodeReply& reply) override;
  void decide() override;
  std::string name_;
  std::vector<std::vector<Seen>> seen_;  // by node
  std::vector<bool> writer_waiting_;     // by node
  std::function<void(Result<RwInspection>)> done_;
};

}  // namespace fencelock::storage
