#include "engine/script_operation.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <map>

#include "engine/lease_value.h"
#include "fencelock/storage/lease_timing.h"

namespace fencelock::storage {

using Clock = std::chrono::steady_clock;

namespace {

// The lease is known not to hold a quorum: not even the nodes that failed to answer could have
// made up the difference, and it is not merely that too few nodes vote (then: unavailable).
bool surely_not_held(const QuorumTally& tally) {
  return !tally.unavailable() &&
         tally.yes_votes() + tally.failed_voters() + tally.pending_voters() < tally.quorum();
}

// Nothing more to learn and neither held nor surely not held: too few nodes answered to tell.
bool cannot_tell(const QuorumTally& tally) {
  return tally.unavailable() || tally.pending_voters() == 0;
}

}  // namespace

ScriptOperation::ScriptOperation(const std::shared_ptr<EngineCore>& core, OperationKind kind,
                                 Script script, std::vector<std::string> keys,
                                 std::vector<std::string> args)
    : core_(core),
      tally_(core_->new_tally()),
      kind_(kind),
      script_(script),
      keys_(std::move(keys)),
      args_(std::move(args)) {}

RespCommand ScriptOperation::command(bool eval) const {
  return EngineCore::script_command(script_, eval, keys_, args_);
}

void ScriptOperation::start() {
  started_ = Clock::now();
  core_->operation_started();
  if (kind_ != OperationKind::kInspect) core_->note_foreground();
  core_->broadcast(command(false), shared_from_this(), 0);
  decide();
}

void ScriptOperation::on_reply(std::size_t node, std::uint32_t cookie, NodeReply reply) {
  // Once: the EVAL goes out with cookie 1, which is never resent. Also after the outcome is
  // decided: a release or extend that a straggling node refused with NOSCRIPT must still run there
  // (otherwise the released lease stays on that node until its ttl).
  if (cookie == 0 && core_->resend_on_noscript(
                         node, reply, [this] { return command(true); }, shared_from_this(), 1)) {
    return;
  }
  if (finished_) return on_late_answer();
  on_answer(node, reply);
}

void ScriptOperation::finish(std::optional<ErrorCode> error) {
  finished_ = true;
  core_->report(kind_, error, Clock::now() - started_, 1, &tally_, Clock::duration{0});
  core_->operation_finished();
}

std::string release_tag_for(EngineCore& core, const std::vector<std::string>& names) {
  for (const auto& name : names) {
    if (core.waiters().has_waiters(name) || core.watches().watched(name))
      return core.new_release_tag();
  }
  return {};
}

ReleaseOperation::ReleaseOperation(const std::shared_ptr<EngineCore>& core, ClaimTarget target,
                                   std::string release_tag, std::function<void(Result<bool>)> done)
    : ClaimOperation(core, OperationKind::kRelease, target.script, std::move(target.keys),
                     target.owned,
                     release_tag.empty() ? std::vector<std::string>{target.claim}
                                         : std::vector<std::string>{target.claim, release_tag},
                     std::move(done)),
      names_(std::move(target.names)),
      release_tag_(std::move(release_tag)) {}

void ReleaseOperation::decide() {
  if (finished()) return;
  if (tally_.outcome() == TallyOutcome::kReached) {
    complete(true);
    // Hand the lock over without a retry delay.
    for (const auto& name : names_) core_->waiters().wake_first(name, release_tag_);
  } else if (surely_not_held(tally_)) {
    complete(false);
  } else if (cannot_tell(tally_)) {
    complete(core_->shortfall_error(tally_));
  }
  // Whatever it decided, it may have deleted the lease on some nodes: this engine's watchers of
  // the names look again (an engine does not hear its own announcements).
  if (finished()) {
    for (const auto& name : names_) core_->watches().changed(name);
  }
}

void ReleaseOperation::on_late_answer() {
  for (const auto& name : names_) core_->watches().changed(name);
}

ExtendOperation::ExtendOperation(const std::shared_ptr<EngineCore>& core, ClaimTarget target,
                                 std::uint64_t token, std::chrono::milliseconds ttl,
                                 std::function<void(Result<Extension>)> done,
                                 const std::string& extra)
    : ClaimOperation(
          core, OperationKind::kExtend, target.script, std::move(target.keys), target.owned,
          extra.empty()
              ? std::vector<std::string>{target.claim, std::to_string(ttl.count())}
              : std::vector<std::string>{target.claim, std::to_string(ttl.count()), extra},
          std::move(done)),
      token_(token),
      ttl_(ttl) {}

void ExtendOperation::decide() {
  if (finished()) return;
  if (tally_.outcome() == TallyOutcome::kReached) {
    const auto validity = reportable_validity(
        remaining_validity(ttl_, Clock::now() - started_, core_->options().drift_factor));
    if (validity < std::chrono::milliseconds(1)) {
      complete(make_error(ErrorCode::kUnavailable, "the extend took longer than the ttl allows"));
    } else {
      complete(Extension{token_, ttl_, validity, started_});
    }
  } else if (surely_not_held(tally_)) {
    complete(make_error(ErrorCode::kLeaseLost, "the lease no longer holds a quorum of lock nodes"));
  } else if (cannot_tell(tally_)) {
    complete(core_->shortfall_error(tally_));
  }
}

InspectOperation::InspectOperation(const std::shared_ptr<EngineCore>& core,
                                   const std::vector<std::string>& keys,
                                   std::function<void(Result<Inspection>)> done,
                                   const std::string& mark)
    : ScriptOperation(core, OperationKind::kInspect, Script::kInspect, keys,
                      mark.empty() ? std::vector<std::string>{} : std::vector<std::string>{mark}),
      key_count_(keys.size()),
      holdings_(tally_.node_count(), std::vector<Holding>(keys.size())),
      done_(std::move(done)) {}

void InspectOperation::on_answer(std::size_t node, const NodeReply& reply) {
  bool well_formed = reply.is_array(2 * key_count_);
  for (std::size_t k = 0; well_formed && k < key_count_; ++k)
    well_formed = reply.elements[2 * k + 1].is_integer();
  if (!well_formed) {
    tally_.record(node, Vote::kFailed);
  } else {
    for (std::size_t k = 0; k < key_count_; ++k) {
      const NodeReply& value = reply.elements[2 * k];
      Holding& holding = holdings_[node][k];
      // A waiter's mark ("<value>#<mark>") does not change who holds the lock.
      if (value.is_string()) holding.value = value.text.substr(0, value.text.find('#'));
      holding.pttl_ms = reply.elements[2 * k + 1].integer;
    }
    tally_.record(node, Vote::kYes);  // "answered"; holdings decide who holds what
  }
  decide();
}

void InspectOperation::decide() {
  if (finished() || tally_.pending_voters() != 0) return;
  if (tally_.answered_voters() < tally_.quorum()) {
    finish(ErrorCode::kUnavailable);
    core_->complete_later(std::move(done_), Result<Inspection>(core_->shortfall_error(tally_)));
    return;
  }
  Inspection inspection;
  inspection.keys.reserve(key_count_);
  for (std::size_t k = 0; k < key_count_; ++k) inspection.keys.push_back(decide_key(k));
  for (std::size_t i = 0; i < holdings_.size(); ++i)
    inspection.answered.push_back(tally_.is_voter(i) && tally_.vote_of(i) == Vote::kYes);
  finish(std::nullopt);
  core_->complete_later(std::move(done_), Result<Inspection>(std::move(inspection)));
}

InspectedKey InspectOperation::decide_key(std::size_t key) const {
  // Group the voting nodes' remaining ttls by the value they hold (nodes in configured order).
  std::map<std::string, std::vector<std::int64_t>> by_value;
  std::map<std::string, std::vector<std::size_t>> nodes_of;
  for (std::size_t i = 0; i < holdings_.size(); ++i) {
    const Holding& holding = holdings_[i][key];
    if (!tally_.is_voter(i) || tally_.vote_of(i) != Vote::kYes || !holding.value) continue;
    by_value[*holding.value].push_back(holding.pttl_ms);
    nodes_of[*holding.value].push_back(i);
  }
  InspectedKey inspected;
  LockStatus& status = inspected.status;
  std::size_t answered = 0;
  for (std::size_t i = 0; i < holdings_.size(); ++i)
    answered += tally_.is_voter(i) && tally_.vote_of(i) == Vote::kYes ? 1U : 0U;
  for (auto& [value, ttls] : by_value) {
    if (ttls.size() < tally_.quorum()) {
      if (ttls.size() + (holdings_.size() - answered) >= tally_.quorum())
        inspected.maybe_held = true;
      continue;
    }
    LeaseValueFacts facts = read_lease_value(value);
    status.token = facts.token;
    status.holder = std::move(facts.holder);
    inspected.holders = std::move(nodes_of.at(value));
    // Held until fewer than a quorum still have it: the quorum-th largest remaining ttl.
    std::sort(ttls.begin(), ttls.end(), std::greater<>());
    status.held = true;
    // The ttls were read during the operation: take its whole duration off.
    const auto elapsed = std::chrono::ceil<std::chrono::milliseconds>(Clock::now() - started_);
    status.remaining = std::max(std::chrono::milliseconds(0),
                                std::chrono::milliseconds(ttls[tally_.quorum() - 1]) - elapsed);
  }
  return inspected;
}

Error maybe_held_error(const std::string& name) {
  return make_error(
      ErrorCode::kUnavailable,
      "a lock node did not answer in time to tell whether '" + name + "' is held; ask again");
}

Result<LockStatus> known_status(InspectedKey key, const std::string& name) {
  if (!key.status.held && key.maybe_held) return maybe_held_error(name);
  return std::move(key.status);
}

InspectSemaphoreOperation::InspectSemaphoreOperation(
    const std::shared_ptr<EngineCore>& core, std::string config_key,
    std::function<void(Result<SemaphoreInspection>)> done)
    : ScriptOperation(core, OperationKind::kInspect, Script::kInspectSemaphore,
                      {std::move(config_key)}, {}),
      seen_(tally_.node_count()),
      done_(std::move(done)) {}

void InspectSemaphoreOperation::on_answer(std::size_t node, const NodeReply& reply) {
  // {N or "", {"<slot>:<holder id>", ...}}
  const bool well_formed =
      reply.is_array(2) && reply.elements[0].is_string() && reply.elements[1].is_array();
  if (!well_formed || node >= seen_.size()) {
    tally_.record(node, Vote::kFailed);
  } else {
    seen_[node].permits = reply.elements[0].text;
    for (const NodeReply& slot : reply.elements[1].elements) seen_[node].slots.push_back(slot.text);
    tally_.record(node, Vote::kYes);  // "answered"
  }
  decide();
}

void InspectSemaphoreOperation::decide() {
  if (finished() || tally_.pending_voters() != 0) return;
  if (tally_.answered_voters() < tally_.quorum()) {
    finish(ErrorCode::kUnavailable);
    core_->complete_later(std::move(done_),
                          Result<SemaphoreInspection>(core_->shortfall_error(tally_)));
    return;
  }
  std::map<std::string, std::size_t> counts;   // count text → nodes
  std::map<std::string, std::uint32_t> slots;  // "<slot>:<holder>" → its nodes (bit mask)
  SemaphoreInspection inspection;
  for (std::size_t i = 0; i < seen_.size(); ++i) {
    if (!tally_.is_voter(i) || tally_.vote_of(i) != Vote::kYes) continue;
    inspection.answered |= 1u << i;
    if (!seen_[i].permits.empty()) ++counts[seen_[i].permits];
    for (const auto& slot : seen_[i].slots) slots[slot] |= 1u << i;
  }
  const auto silent = seen_.size() - static_cast<std::size_t>(std::popcount(inspection.answered));
  SemaphoreStatus& status = inspection.status;
  for (const auto& [slot, nodes] : slots) {
    const auto holders = static_cast<std::size_t>(std::popcount(nodes));
    if (holders >= tally_.quorum()) {
      ++status.held;
      inspection.held_on.push_back(nodes);
    } else if (holders + silent >= tally_.quorum()) {
      inspection.maybe_held = true;
    }
  }
  // The count of the live semaphore: the one most nodes hold (0 when no permit is live).
  std::size_t best = 0;
  for (const auto& [text, nodes] : counts) {
    std::uint32_t permits = 0;
    std::from_chars(text.data(), text.data() + text.size(), permits);
    if (nodes > best) {
      best = nodes;
      status.permits = permits;
    }
  }
  if (status.held == 0) status.permits = 0;
  finish(std::nullopt);
  core_->complete_later(std::move(done_), Result<SemaphoreInspection>(std::move(inspection)));
}

}  // namespace fencelock::storage
