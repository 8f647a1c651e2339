#include "engine/acquire_operation.h"

#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <cstdint>
#include <random>
#include <utility>

#include "engine/fences.h"
#include "engine/lease_value.h"
#include "fencelock/storage/failpoints.h"
#include "fencelock/storage/lease_secret.h"
#include "fencelock/storage/lease_timing.h"

namespace fencelock::storage {

namespace asio = boost::asio;

AcquireOperation::AcquireOperation(std::shared_ptr<EngineCore> core, AcquireTarget target,
                                   std::string value, std::unique_ptr<AcquireShape> shape)
    : core_(std::move(core)),
      target_(std::move(target)),
      shape_(std::move(shape)),
      value_(std::move(value)),
      value_tail_(
          lease_value_tail(target_.request.empty() ? "" : "p" + target_.request, target_.holder)),
      retry_timer_(core_->strand()) {
  for (const auto& n : target_.names) fence_keys_.push_back(core_->key_of(fence_name(n)));
}

AttemptFacts AcquireOperation::facts() const {
  AttemptFacts facts;
  facts.names = target_.names;
  facts.value = value_;
  facts.value_tail = value_tail_;
  facts.tokens = token_args_;
  facts.fence_keys = fence_keys_;
  facts.ttl = target_.ttl;
  if (marking_) facts.mark = core_->engine_id();
  facts.request = target_.request;
  facts.probing = probing_;
  facts.wait_ends = call_started_ + target_.wait;
  return facts;
}

Error AcquireOperation::held_error() const {
  return make_error(ErrorCode::kLocked, shape_->held_message());
}

void AcquireOperation::start() {
  call_started_ = Clock::now();
  core_->operation_started();
  shape_->start(*core_);
  core_->track(this, weak_from_this());
  // Others already wait for one of these names: queue behind them instead of barging in (no
  // starvation).
  if (target_.wait.count() > 0 && !core_->stopped()) {
    const bool behind = shape_->behind_waiters(core_->waiters());
    // A request's repeat probes first: an attempt that takes nothing, but finds an earlier grant.
    probing_ = behind && !target_.request.empty();
    if (behind && !probing_) {
      sleep_until_retry(held_error());
      return;
    }
  }
  attempt();
}

void AcquireOperation::attempt() {
  if (core_->stopped()) {
    complete(make_error(ErrorCode::kUnavailable, "the engine is stopping"));
    return;
  }
  if (auto refusal = core_->grant_refusal(target_.ttl)) {  // nothing is sent: no node is touched
    complete(core_->refusal_error(std::move(*refusal)));
    return;
  }
  ++attempt_;
  woken_during_attempt_ = false;
  consumed_wakeups_ = std::move(pending_wakeups_);
  pending_wakeups_.clear();
  // Validity counts from here: before the token draw and before any request reaches a node.
  attempt_started_ = Clock::now();
  marking_ = attempt_started_ < call_started_ + target_.wait;  // it would wait if refused
  // Queued from its first marking attempt on: a release announced while it is out must reach it.
  if (marking_) join_queue();
  draw_tokens();
}

void AcquireOperation::draw_tokens() {
  TokenSource* tokens = core_->tokens();
  token_requested_ = Clock::now();
  tokens_.assign(target_.names.size(), 0);
  token_error_.reset();
  if (tokens == nullptr) {
    vote();
    return;
  }
  phase_ = Phase::kDrawingToken;
  token_floor_ = core_->token_floor();  // what the tokens must be above, known before the draw
  tokens_pending_ = target_.names.size();
  // One token per name, all drawn at once. The token source may answer on another thread: come
  // back to the strand. The answer moves its reference to the operation along, so the source's
  // thread never holds the last one (the operation's timers belong to the engine's context).
  for (std::size_t i = 0; i < target_.names.size(); ++i) {
    tokens->next(target_.names[i], [self = shared_from_this(), attempt = attempt_,
                                    i](Result<std::uint64_t> token) mutable {
      if (!self) return;  // answered once (TokenSource's contract); a second answer is dropped
      const auto& strand = self->core_->strand();  // the engine's, alive while the operation is
      asio::dispatch(strand,
                     [self = std::move(self), attempt, i, token = std::move(token)]() mutable {
                       self->on_token(attempt, i, std::move(token));
                     });
    });
  }
}

void AcquireOperation::on_token(std::uint32_t attempt, std::size_t index,
                                Result<std::uint64_t> token) {
  if (attempt != attempt_ || phase_ != Phase::kDrawingToken) return;
  if (token.ok()) {
    tokens_[index] = token.value();
  } else if (!token_error_) {
    token_error_ = std::move(token).error();
  }
  if (--tokens_pending_ == 0) on_all_tokens();
}

void AcquireOperation::on_all_tokens() {
  token_draw_ = Clock::now() - token_requested_;
  // Nothing was written yet: a failure here completes without touching a node.
  if (abandoned_) {
    complete(make_error(ErrorCode::kCancelled, "the acquire was cancelled"));
    return;
  }
  if (token_error_) {
    complete(make_error(ErrorCode::kUnavailable, "fencing token: " + token_error_->message));
    return;
  }
  for (const std::uint64_t token : tokens_) {
    if (auto refusal = core_->token_refusal(token, token_floor_)) {
      complete(make_error(ErrorCode::kUnavailable, std::move(*refusal)));
      return;
    }
  }
  if (remaining_validity(target_.ttl, Clock::now() - attempt_started_,
                         core_->options().drift_factor) < std::chrono::milliseconds(1)) {
    complete(make_error(ErrorCode::kUnavailable,
                        "the token draw took longer than the ttl allows; no validity left"));
    return;
  }
  vote();
}

void AcquireOperation::vote() {
  phase_ = Phase::kVoting;
  core_->note_foreground();
  tally_.emplace(core_->new_tally());
  answers_.assign(core_->node_count(), NodeAnswer{});
  fences_.assign(target_.names.size(), 0);
  fence_refusals_ = 0;
  token_args_.clear();
  for (const std::uint64_t token : tokens_)  // no token source, no fence
    token_args_.push_back(core_->tokens() == nullptr ? std::string() : std::to_string(token));
  shape_->begin_attempt(marking_);
  confirmations_.assign(core_->node_count(), Confirmation{});
  if (!target_.request.empty()) repeats_.assign(core_->node_count(), std::string());
  // A cluster with too few voting nodes connected is decided before anything is sent: such an
  // attempt cannot be granted, and a revoke sent anyway would overwrite the key on the nodes it
  // reached and its cleanup delete it there — taking a lease being granted through those nodes
  // from under its quorum (docs/architecture.md, "Revoke").
  core_->fail_unconnected(*tally_);
  if (tally_->outcome() == TallyOutcome::kImpossible) {
    attempt_failed(core_->shortfall_error(*tally_));
    return;
  }
  core_->broadcast(shape_->command(*core_, facts(), /*eval=*/false), shared_from_this(), attempt_);
  core_->confirm_votes(shared_from_this(), attempt_ | kEvictionsRead);
}

void AcquireOperation::on_reply(std::size_t node, std::uint32_t cookie, NodeReply reply) {
  if (cookie == (attempt_ | kExpiryRead)) {
    if (phase_ == Phase::kReadingExpiry) on_expiry_read(node, reply);
    return;
  }
  if (cookie == (attempt_ | kEvictionsRead)) {
    if (phase_ == Phase::kVoting) on_confirmation(node, reply);
    return;
  }
  if (cookie == (attempt_ | kAdopt)) {
    if (phase_ == Phase::kRepeating) on_takeover(node, reply);
    return;
  }
  if (cookie != attempt_ || phase_ != Phase::kVoting) return;  // a straggler: already decided
  if (core_->resend_on_noscript(
          node, reply, [this] { return shape_->command(*core_, facts(), /*eval=*/true); },
          shared_from_this(), attempt_)) {
    ++confirmations_.at(node).reads_left;  // the script runs again: so does the read after it
    core_->confirm_vote(node, shared_from_this(), attempt_ | kEvictionsRead);
    return;
  }
  Vote vote = Vote::kFailed;
  if (const auto fenced = fence_refusal(reply); fenced && node < answers_.size()) {
    // Free here, but this attempt's token is not above what the node has seen: a no.
    answers_[node].kind = NodeAnswer::Kind::kFree;
    if (fenced->first < fences_.size())
      fences_[fenced->first] = std::max(fences_[fenced->first], fenced->second);
    ++fence_refusals_;
    vote = Vote::kNo;
  } else if (node < answers_.size()) {
    vote = note_repeat(node, reply) || probe_found_free(node, reply)
               ? Vote::kNo
               : shape_->read_vote(reply, answers_[node]);
  }
  if (vote == Vote::kYes && node < confirmations_.size()) {
    Confirmation& confirmation = confirmations_[node];
    if (confirmation.reads_left != 0) {
      confirmation.yes_waiting = true;
      return;
    }
    if (confirmation.refused) vote = Vote::kFailed;
  }
  count_vote(node, vote);
}

void AcquireOperation::on_confirmation(std::size_t node, const NodeReply& reply) {
  if (node >= confirmations_.size() || confirmations_[node].reads_left == 0) return;
  Confirmation& confirmation = confirmations_[node];
  if (!reply.is_integer(1)) confirmation.refused = true;
  if (--confirmation.reads_left != 0 || !confirmation.yes_waiting) return;
  confirmation.yes_waiting = false;
  count_vote(node, confirmation.refused ? Vote::kFailed : Vote::kYes);
}

void AcquireOperation::count_vote(std::size_t node, Vote vote) {
  tally_->record(node, vote);
  if (auto head = repeat_on_quorum()) {
    take_over(std::move(*head));
    return;
  }
  switch (tally_->outcome()) {
    case TallyOutcome::kUndecided:
      return;
    case TallyOutcome::kReached:
      on_quorum();
      return;
    case TallyOutcome::kImpossible:
      break;
  }
  if (tally_->unavailable()) {
    attempt_failed(core_->shortfall_error(*tally_));
  } else if (fenced_out()) {
    fenced_attempt_ = true;
    attempt_failed(fence_error());
  } else if (auto refusal = shape_->own_refusal()) {
    attempt_failed(std::move(*refusal));
  } else {
    attempt_failed(held_error());
  }
}

bool AcquireOperation::first_in_a_queue() const {
  return std::any_of(queues().begin(), queues().end(), [this](const std::string& queue) {
    return core_->waiters().is_first(queue, this);
  });
}

bool AcquireOperation::fenced_out() const {
  if (fence_refusals_ == 0) return false;
  // Refused by holders on so many nodes that no quorum was free: the lock is held, whatever the
  // fences said (a waiter waits for it).
  std::size_t held = 0;
  for (const NodeAnswer& answer : answers_) {
    if (answer.kind == NodeAnswer::Kind::kHeld) ++held;
  }
  return held + core_->quorum() <= core_->node_count();
}

Error AcquireOperation::fence_error() const {
  std::size_t index = 0;
  while (index + 1 < fences_.size() && fences_[index] == 0) ++index;
  Error error = make_error(
      ErrorCode::kUnavailable,
      "the token store is behind the lock nodes: token " + std::to_string(tokens_[index]) +
          " for \"" + target_.names[index] + "\" is not above " + std::to_string(fences_[index]) +
          ", which the nodes have seen granted (a copied, restored, wiped or new token store?)");
  return error;
}

void AcquireOperation::on_quorum() {
  if (abandoned_) {  // won while its caller went away: nobody would ever release it
    attempt_failed(make_error(ErrorCode::kCancelled, "the acquire was cancelled"));
    return;
  }
  // The validity check covers the token draws and the quorum: lease order then equals token order.
  const auto validity = reportable_validity(remaining_validity(
      target_.ttl, Clock::now() - attempt_started_, core_->options().drift_factor));
  if (validity < std::chrono::milliseconds(1)) {
    attempt_failed(make_error(ErrorCode::kUnavailable,
                              "the quorum took longer than the ttl allows; no validity left"));
    return;
  }
  // The registry's verdict may have changed while the draw and the quorum were out.
  for (const std::uint64_t token : tokens_) {
    if (auto refusal = core_->token_refusal(token, token_floor_)) {
      attempt_failed(make_error(ErrorCode::kUnavailable, std::move(*refusal)));
      return;
    }
  }
  grant(validity);
}

void AcquireOperation::grant(std::chrono::milliseconds validity) {
  failpoints::on_grant_decided();
  GrantFacts granted;
  granted.names = target_.names;
  granted.owner = target_.owner;
  granted.tokens = tokens_;
  granted.ttl = target_.ttl;
  granted.validity = validity;
  granted.started = attempt_started_;
  granted.waited = std::chrono::floor<std::chrono::milliseconds>(attempt_started_ - call_started_);
  granted.repeated = !takeover_head_.empty();
  finish(std::nullopt);
  shape_->grant(*core_, facts(), std::move(granted));
  core_->operation_finished();
}

void AcquireOperation::attempt_failed(Error error) {
  probing_ = false;  // only a waiting repeat's first attempt probes
  shape_->clean_up(*core_, facts());
  if (abandoned_) {
    complete(make_error(ErrorCode::kCancelled, "the acquire was cancelled"));
    // It may have held the lock a moment: the next waiter need not sleep out its retry delay.
    for (const auto& queue : queues()) core_->waiters().wake_first(queue, {});
    return;
  }
  if (std::exchange(fenced_attempt_, false)) {
    // Behind a fence: the source skips past it (if it can), and the next draw is above it —
    // unless the source keeps answering tokens the nodes saw (it went back, or is a copy).
    for (std::size_t i = 0; i < fences_.size(); ++i) {
      if (fences_[i] != 0 && core_->tokens() != nullptr)
        core_->tokens()->skip_past(target_.names[i], fences_[i]);
    }
    if (fence_retries_.retry_after(tokens_, fences_) && !core_->stopped()) {
      retry_now();
      return;
    }
    complete(std::move(error));
    return;
  }
  fence_retries_.reset();
  if (error.code == ErrorCode::kLocked) {
    note_refusal();
    const auto released = std::exchange(released_while_out_, {});
    const AfterRefusal next =
        shape_->refused(*core_, RefusalFacts{this, consumed_wakeups_, released});
    consumed_wakeups_.clear();
    if (next == AfterRefusal::kTryAgainNow) {
      retry_now();
      return;
    }
    if (next == AfterRefusal::kTryAgainSoon) woken_during_attempt_ = true;
  }
  // Only a held lock is worth waiting for. An outage (too few nodes answered, no token, no
  // validity left) is answered at once: waiting it out would hold the caller for its whole budget.
  // So is a permit count that does not match the live semaphore's.
  const bool retryable = error.code == ErrorCode::kLocked;
  const auto budget_end = call_started_ + target_.wait;
  const auto now = Clock::now();
  if (!retryable || core_->stopped() || now >= budget_end) {
    // The refusal came before enough answers to tell when the lock frees (too few voting nodes
    // for the refusals to wait for the rest): a lock asks the nodes still to answer.
    if (retryable && !grantable_at_ && read_refusers_expiry()) return;
    complete(std::move(error));
    return;
  }
  if (woken_during_attempt_) {
    // The lock was released while this attempt was on its way: it may have lost only to the
    // release's stragglers, so try again now instead of sleeping out the retry delay.
    retry_now();
    return;
  }
  sleep_until_retry(std::move(error));
}

}  // namespace fencelock::storage
