#include "script_operation.h"

#include <algorithm>
#include <map>

#include "fencelock/storage/lease_timing.h"

namespace fencelock::storage {

using Clock = std::chrono::steady_clock;

namespace {

// Release and extend scripts answer 1 (done) or 0 (not ours, or gone); -1 is handled before.
Vote vote_for_compare_and_set(const NodeReply& reply) {
  if (reply.kind != NodeReply::Kind::kInteger) return Vote::kFailed;
  return reply.integer == 1 ? Vote::kYes : Vote::kNo;
}

std::string too_few_answered(const QuorumTally& tally) {
  return "only " + std::to_string(tally.answered_voters()) + " of " + std::to_string(tally.node_count()) +
         " lock nodes answered; a quorum of " + std::to_string(tally.quorum()) + " is needed";
}

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

ScriptOperation::ScriptOperation(std::shared_ptr<EngineCore> core, OperationKind kind, Script script,
                                 std::vector<std::string> keys, std::vector<std::string> args)
    : core_(std::move(core)),
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
  core_->broadcast(command(false), shared_from_this(), 0);
  decide();
}

void ScriptOperation::on_reply(std::size_t node, std::uint32_t cookie, NodeReply reply) {
  if (finished_) return;
  if (cookie == 0 && reply.is_error_prefix("NOSCRIPT")) {
    core_->send_to(node, command(true), shared_from_this(), 1);  // once: cookie 1 is never retried
    return;
  }
  on_answer(node, reply);
}

void ScriptOperation::finish(std::optional<ErrorCode> error) {
  finished_ = true;
  if (EngineObserver* observer = core_->observer()) {
    OperationReport report{kind_, error, Clock::now() - started_, 1, {}, Clock::duration{0}};
    for (std::size_t i = 0; i < tally_.node_count(); ++i) report.votes.push_back(tally_.vote_of(i));
    observer->on_operation(report);
  }
  core_->operation_finished();
}

std::string ScriptOperation::claim_argument(const LeaseClaim& claim) {
  std::string argument = claim.proof;
  argument.append(std::to_string(claim.token));
  return argument;
}

ReleaseOperation::ReleaseOperation(std::shared_ptr<EngineCore> core, std::string_view name,
                                   const LeaseClaim& claim, std::function<void(Result<bool>)> done)
    : ReleaseOperation(core, name, claim,
                       // Tagged only with waiters here: the tag lets the script skip announcing a
                       // release that only our own waiters wait for (they are woken directly).
                       core->has_waiters(std::string(name)) ? core->new_release_tag() : std::string(),
                       std::move(done)) {}

ReleaseOperation::ReleaseOperation(std::shared_ptr<EngineCore> core, std::string_view name,
                                   const LeaseClaim& claim, std::string release_tag,
                                   std::function<void(Result<bool>)> done)
    : ScriptOperation(core, OperationKind::kRelease, Script::kRelease, {core->key_of(name)},
                      release_tag.empty() ? std::vector<std::string>{claim_argument(claim)}
                                          : std::vector<std::string>{claim_argument(claim), release_tag}),
      name_(name),
      release_tag_(std::move(release_tag)),
      done_(std::move(done)) {}

void ReleaseOperation::on_answer(std::size_t node, const NodeReply& reply) {
  if (claim_refused(reply)) return refuse_claim(done_);
  tally_.record(node, vote_for_compare_and_set(reply));
  decide();
}

void ReleaseOperation::decide() {
  if (finished()) return;
  if (tally_.outcome() == TallyOutcome::kReached) {
    finish(std::nullopt);
    core_->complete_later(std::move(done_), Result<bool>(true));
    core_->wake_first_waiter(name_, release_tag_);  // hand the lock over without a retry delay
  } else if (surely_not_held(tally_)) {
    finish(std::nullopt);
    core_->complete_later(std::move(done_), Result<bool>(false));
  } else if (cannot_tell(tally_)) {
    finish(ErrorCode::kUnavailable);
    core_->complete_later(std::move(done_), Result<bool>(make_error(ErrorCode::kUnavailable, too_few_answered(tally_))));
  }
}

ExtendOperation::ExtendOperation(std::shared_ptr<EngineCore> core, std::string_view name,
                                 const LeaseClaim& claim, std::chrono::milliseconds ttl,
                                 std::function<void(Result<Extension>)> done)
    : ScriptOperation(core, OperationKind::kExtend, Script::kExtend, {core->key_of(name)},
                      {claim_argument(claim), std::to_string(ttl.count())}),
      token_(claim.token),
      ttl_(ttl),
      done_(std::move(done)) {}

void ExtendOperation::on_answer(std::size_t node, const NodeReply& reply) {
  if (claim_refused(reply)) return refuse_claim(done_);
  tally_.record(node, vote_for_compare_and_set(reply));
  decide();
}

void ExtendOperation::decide() {
  if (finished()) return;
  if (tally_.outcome() == TallyOutcome::kReached) {
    const auto validity = reportable_validity(
        remaining_validity(ttl_, Clock::now() - started_, core_->options().drift_factor));
    if (validity < std::chrono::milliseconds(1)) {
      finish(ErrorCode::kUnavailable);
      core_->complete_later(std::move(done_), Result<Extension>(make_error(ErrorCode::kUnavailable, "the extend took longer than the ttl allows")));
      return;
    }
    finish(std::nullopt);
    core_->complete_later(std::move(done_), Result<Extension>(Extension{token_, ttl_, validity, started_}));
  } else if (surely_not_held(tally_)) {
    finish(ErrorCode::kLeaseLost);
    core_->complete_later(std::move(done_), Result<Extension>(make_error(ErrorCode::kLeaseLost, "the lease no longer holds a quorum of lock nodes")));
  } else if (cannot_tell(tally_)) {
    finish(ErrorCode::kUnavailable);
    core_->complete_later(std::move(done_), Result<Extension>(make_error(ErrorCode::kUnavailable, too_few_answered(tally_))));
  }
}

InspectOperation::InspectOperation(std::shared_ptr<EngineCore> core, std::string_view name,
                                   std::function<void(Result<LockStatus>)> done)
    : ScriptOperation(core, OperationKind::kInspect, Script::kInspect, {core->key_of(name)}, {}),
      holdings_(tally_.node_count()),
      done_(std::move(done)) {}

void InspectOperation::on_answer(std::size_t node, const NodeReply& reply) {
  const bool well_formed = reply.kind == NodeReply::Kind::kArray && reply.elements.size() == 2 &&
                           reply.elements[1].kind == NodeReply::Kind::kInteger;
  if (!well_formed) {
    tally_.record(node, Vote::kFailed);
  } else {
    const NodeReply& value = reply.elements[0];
    // A waiter's mark ("<value>#<mark>") does not change who holds the lock.
    if (value.kind == NodeReply::Kind::kString) holdings_[node].value = value.text.substr(0, value.text.find('#'));
    holdings_[node].pttl_ms = reply.elements[1].integer;
    tally_.record(node, Vote::kYes);  // "answered"; holdings decide who holds what
  }
  decide();
}

void InspectOperation::decide() {
  if (finished() || tally_.pending_voters() != 0) return;
  if (tally_.answered_voters() < tally_.quorum()) {
    finish(ErrorCode::kUnavailable);
    core_->complete_later(std::move(done_), Result<LockStatus>(make_error(ErrorCode::kUnavailable, too_few_answered(tally_))));
    return;
  }
  // Group the voting nodes' remaining ttls by the value they hold.
  std::map<std::string, std::vector<std::int64_t>> by_value;
  for (std::size_t i = 0; i < holdings_.size(); ++i) {
    if (!tally_.is_voter(i) || tally_.vote_of(i) != Vote::kYes || !holdings_[i].value) continue;
    by_value[*holdings_[i].value].push_back(holdings_[i].pttl_ms);
  }
  LockStatus status;
  for (auto& [value, ttls] : by_value) {
    if (ttls.size() < tally_.quorum()) continue;
    // Held until fewer than a quorum still have it: the quorum-th largest remaining ttl.
    std::sort(ttls.begin(), ttls.end(), std::greater<>());
    status.held = true;
    // The ttls were read during the operation: take its whole duration off.
    const auto elapsed = std::chrono::ceil<std::chrono::milliseconds>(Clock::now() - started_);
    status.remaining = std::max(std::chrono::milliseconds(0),
                                std::chrono::milliseconds(ttls[tally_.quorum() - 1]) - elapsed);
  }
  finish(std::nullopt);
  core_->complete_later(std::move(done_), Result<LockStatus>(status));
}

}  // namespace fencelock::storage
