#include "engine/inspect_rw_operation.h"

#include <algorithm>
#include <map>
#include <utility>

#include "engine/acquire_shape.h"
#include "engine/lease_value.h"

namespace fencelock::storage {

InspectRwOperation::InspectRwOperation(const std::shared_ptr<EngineCore>& core,
                                       const std::string& name,
                                       std::function<void(Result<RwInspection>)> done)
    : ScriptOperation(core, OperationKind::kInspect, Script::kInspectRw,
                      {core->key_of(rw_state_name(name)), core->key_of(rw_writer_name(name))}, {}),
      name_(name),
      seen_(tally_.node_count()),
      writer_waiting_(tally_.node_count(), false),
      done_(std::move(done)) {}

void InspectRwOperation::on_answer(std::size_t node, const NodeReply& reply) {
  // {{mode, value, pttl, ...}, waiting writer's lease id or ""}
  bool well_formed = reply.is_array(2) && reply.elements[0].is_array() &&
                     reply.elements[0].elements.size() % 3 == 0 && reply.elements[1].is_string() &&
                     node < seen_.size();
  const auto& live = well_formed ? reply.elements[0].elements : std::vector<NodeReply>{};
  for (std::size_t i = 0; well_formed && i < live.size(); i += 3) {
    well_formed = live[i].is_string() && live[i + 1].is_string() && live[i + 2].is_integer();
  }
  if (!well_formed) {
    tally_.record(node, Vote::kFailed);
    return decide();
  }
  for (std::size_t i = 0; i < live.size(); i += 3) {
    const std::string& value = live[i + 1].text;
    seen_[node].push_back(Seen{live[i].text == "w" ? RwMode::kWrite : RwMode::kRead,
                               value.substr(0, value.find('#')), live[i + 2].integer, node});
  }
  writer_waiting_[node] = !reply.elements[1].text.empty();
  tally_.record(node, Vote::kYes);  // "answered"
  decide();
}

void InspectRwOperation::decide() {
  if (finished() || tally_.pending_voters() != 0) return;
  if (tally_.answered_voters() < tally_.quorum()) {
    finish(ErrorCode::kUnavailable);
    core_->complete_later(std::move(done_), Result<RwInspection>(core_->shortfall_error(tally_)));
    return;
  }
  std::size_t answered = 0;
  std::map<std::string, std::vector<const Seen*>> by_value;
  RwInspection inspection;
  RwLockStatus& status = inspection.status;
  for (std::size_t i = 0; i < seen_.size(); ++i) {
    if (!tally_.is_voter(i) || tally_.vote_of(i) != Vote::kYes) continue;
    ++answered;
    inspection.answered |= 1u << i;
    for (const Seen& seen : seen_[i]) by_value[seen.value].push_back(&seen);
    status.writer_waiting = status.writer_waiting || writer_waiting_[i];
  }
  const auto elapsed =
      std::chrono::ceil<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_);
  for (auto& [value, seen] : by_value) {
    if (seen.size() < tally_.quorum()) {
      if (seen.size() + (seen_.size() - answered) >= tally_.quorum()) inspection.maybe_held = true;
      continue;
    }
    // Held until fewer than a quorum still have it: the quorum-th largest remaining ttl.
    std::sort(seen.begin(), seen.end(),
              [](const Seen* a, const Seen* b) { return a->pttl > b->pttl; });
    std::uint32_t nodes = 0;
    for (const Seen* one : seen) nodes |= 1u << one->node;
    inspection.held_on.push_back(nodes);
    LeaseValueFacts facts = read_lease_value(value);
    status.grants.push_back(RwLockStatus::Grant{
        seen.front()->mode, facts.token.value_or(0), std::move(facts.holder),
        std::max(std::chrono::milliseconds(0),
                 std::chrono::milliseconds(seen[tally_.quorum() - 1]->pttl) - elapsed)});
  }
  std::sort(status.grants.begin(), status.grants.end(),
            [](const auto& a, const auto& b) { return a.token < b.token; });
  finish(std::nullopt);
  core_->complete_later(std::move(done_), Result<RwInspection>(std::move(inspection)));
}

}  // namespace fencelock::storage
