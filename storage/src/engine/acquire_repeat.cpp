// A request's repeat (AcquireTarget::request): an attempt that finds the request's earlier grant
// on a quorum takes it over on every node (kAdoptLeaseScript) and answers it again. Why this is
// safe: docs/architecture.md, "Idempotent acquire".
#include <algorithm>
#include <functional>

#include "engine/acquire_operation.h"
#include "engine/lease_value.h"
#include "fencelock/storage/lease_timing.h"

namespace fencelock::storage {

bool AcquireOperation::note_repeat(std::size_t node, const NodeReply& reply) {
  if (target_.request.empty() || node >= repeats_.size() || !reply.is_tagged(3, 2) ||
      !reply.elements[1].is_string() || !read_repeated_lease(reply.elements[1].text))
    return false;
  if (tally_->is_voter(node)) repeats_[node] = reply.elements[1].text;  // others never count
  return true;
}

bool AcquireOperation::probe_found_free(std::size_t node, const NodeReply& reply) {
  if (!probing_ || node >= answers_.size() || !reply.is_tagged(1, -4)) return false;
  answers_[node].kind = NodeAnswer::Kind::kFree;
  return true;
}

std::optional<std::string> AcquireOperation::repeat_on_quorum() const {
  for (const std::string& head : repeats_) {
    if (head.empty()) continue;
    if (static_cast<std::size_t>(std::count(repeats_.begin(), repeats_.end(), head)) >=
        core_->quorum())
      return head;
  }
  return std::nullopt;
}

void AcquireOperation::take_over(std::string head) {
  phase_ = Phase::kRepeating;
  takeover_head_ = std::move(head);
  takeover_tally_.emplace(core_->new_tally());
  takeover_pttls_.clear();
  takeover_started_ = Clock::now();  // the validity counts from before the takeover's requests
  const std::string args[] = {takeover_head_ + ":", target_.request};
  core_->broadcast(
      EngineCore::script_command(Script::kAdoptLease, false,
                                 std::span<const std::string>(shape_->lock_key(), 1), args),
      shared_from_this(), attempt_ | kAdopt);
  if (takeover_tally_->outcome() == TallyOutcome::kImpossible) {
    takeover_head_.clear();
    attempt_failed(core_->shortfall_error(*takeover_tally_));
  }
}

void AcquireOperation::on_takeover(std::size_t node, const NodeReply& reply) {
  const auto eval = [this] {
    const std::string args[] = {takeover_head_ + ":", target_.request};
    return EngineCore::script_command(Script::kAdoptLease, true,
                                      std::span<const std::string>(shape_->lock_key(), 1), args);
  };
  if (core_->resend_on_noscript(node, reply, eval, shared_from_this(), attempt_ | kAdopt)) return;
  Vote vote = Vote::kFailed;
  if (reply.is_integer()) {
    vote = reply.integer > 0 ? Vote::kYes : Vote::kNo;
    if (vote == Vote::kYes && takeover_tally_->is_voter(node))
      takeover_pttls_.push_back(reply.integer);
  }
  takeover_tally_->record(node, vote);
  switch (takeover_tally_->outcome()) {
    case TallyOutcome::kUndecided:
      return;
    case TallyOutcome::kReached:
      grant_repeat();
      return;
    case TallyOutcome::kImpossible:
      break;
  }
  takeover_head_.clear();
  if (takeover_tally_->unavailable()) {
    attempt_failed(core_->shortfall_error(*takeover_tally_));
  } else {
    attempt_failed(make_error(ErrorCode::kLocked,
                              "the lock is held by this request's earlier grant, which ended "
                              "before it could be answered again"));
  }
}

void AcquireOperation::grant_repeat() {
  if (abandoned_) {  // taken over, but its caller went away: it runs out its ttl
    takeover_head_.clear();
    attempt_failed(make_error(ErrorCode::kCancelled, "the acquire was cancelled"));
    return;
  }
  // The quorum holds the grant at least as long as the quorum-th longest PTTL, each read after the
  // takeover started: the validity counts from then, less the drift over that time.
  std::sort(takeover_pttls_.begin(), takeover_pttls_.end(), std::greater<>());
  const std::chrono::milliseconds held_for(takeover_pttls_.at(core_->quorum() - 1));
  const auto validity = reportable_validity(remaining_validity(
      held_for, Clock::now() - takeover_started_, core_->options().drift_factor));
  if (validity < std::chrono::milliseconds(1)) {
    takeover_head_.clear();
    attempt_failed(make_error(ErrorCode::kLocked,
                              "the lock is held by this request's earlier grant, which ends "
                              "too soon to be answered again"));
    return;
  }
  // This attempt's own writes (on nodes that found the name free) go; then it is the earlier grant.
  shape_->clean_up(*core_, facts());
  const auto earlier = read_repeated_lease(takeover_head_);
  value_ = earlier->lease;
  tokens_.assign(1, earlier->token.value_or(0));
  attempt_started_ = takeover_started_;
  target_.ttl = held_for;  // the lease's time left on the quorum, not what the repeat asked for
  grant(validity);
}

}  // namespace fencelock::storage
