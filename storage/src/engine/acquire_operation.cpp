#include "engine/acquire_operation.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <cstdint>
#include <random>

#include "fencelock/storage/failpoints.h"
#include "fencelock/storage/lease_secret.h"
#include "fencelock/storage/lease_timing.h"

namespace fencelock::storage {

namespace asio = boost::asio;

namespace {

// The longest a waiter sleeps on the holder's expiry before it looks again: a release is
// announced and wakes it at once, but an announcement can be lost (every subscriber connection
// down at that moment), and this bounds what that costs.
constexpr std::chrono::seconds kLongestExpirySleep{2};
constexpr std::chrono::milliseconds kExpirySpread{2};

// The plain SET answers OK or nil; the acquire-and-mark script 1, or {0, holder, pttl} when
// refused. `answer` learns what the node said about the holder (expiry_wait.h).
Vote vote_for_set(const NodeReply& reply, NodeAnswer& answer) {
  using Kind = NodeReply::Kind;
  if ((reply.kind == Kind::kStatus && reply.text == "OK") ||
      (reply.kind == Kind::kInteger && reply.integer == 1)) {
    answer.kind = NodeAnswer::Kind::kFree;
    return Vote::kYes;
  }
  if (reply.kind == Kind::kNil) return Vote::kNo;
  if (reply.kind == Kind::kArray && reply.elements.size() == 3 &&
      reply.elements[0].kind == Kind::kInteger && reply.elements[0].integer == 0) {
    const NodeReply& holder = reply.elements[1];
    const NodeReply& pttl = reply.elements[2];
    if (holder.kind == Kind::kString && pttl.kind == Kind::kInteger && pttl.integer >= 0) {
      answer.kind = NodeAnswer::Kind::kHeld;
      answer.holder = holder.text;
      answer.remaining = std::chrono::milliseconds(pttl.integer);
    }
    return Vote::kNo;
  }
  return Vote::kFailed;
}

}  // namespace

AcquireOperation::AcquireOperation(std::shared_ptr<EngineCore> core, AcquireRequest request,
                                   std::string value, RedlockEngine::AcquireHandler done)
    : core_(std::move(core)),
      request_(std::move(request)),
      key_(core_->key_of(request_.name)),
      value_(std::move(value)),
      done_(std::move(done)),
      retry_timer_(core_->strand()) {}

void AcquireOperation::start() {
  call_started_ = Clock::now();
  core_->operation_started();
  core_->track(this, weak_from_this());
  // Others already wait for this name: queue behind them instead of barging in (no starvation).
  if (request_.wait.count() > 0 && !core_->stopped() && core_->has_waiters(request_.name)) {
    sleep_until_retry(make_error(ErrorCode::kLocked, "the lock is held by another lease"));
    return;
  }
  attempt();
}

void AcquireOperation::attempt() {
  if (core_->stopped()) {
    complete(make_error(ErrorCode::kUnavailable, "the engine is stopping"));
    return;
  }
  if (auto refusal = core_->grant_refusal()) {  // nothing is sent: no node is touched
    complete(make_error(ErrorCode::kUnavailable, std::move(*refusal)));
    return;
  }
  ++attempt_;
  phase_ = Phase::kVoting;
  woken_during_attempt_ = false;
  tally_.emplace(core_->new_tally());
  answers_.assign(core_->node_count(), NodeAnswer{});
  // Validity counts from here: before the first request reaches any node.
  attempt_started_ = Clock::now();
  marking_ = attempt_started_ < call_started_ + request_.wait;  // it would wait if refused
  // Queued from its first marking attempt on: a release announced while it is out must reach it.
  if (marking_) join_queue();
  core_->broadcast(attempt_command(marking_, /*eval=*/false), shared_from_this(), attempt_);
  // A cluster with too few voting nodes is decided before any answer arrives.
  if (tally_->outcome() == TallyOutcome::kImpossible) {
    attempt_failed(
        make_error(ErrorCode::kUnavailable, "fewer than a quorum of lock nodes are voting"));
  }
}

RespCommand AcquireOperation::attempt_command(bool marking, bool eval) const {
  const auto ttl = std::to_string(request_.ttl.count());
  if (!marking) {
    RespCommand set(6);
    set.arg("SET").arg(key_).arg(value_).arg("NX").arg("PX").arg(ttl);
    return set;
  }
  const std::string keys[] = {key_};
  const std::string args[] = {value_, ttl, core_->engine_id()};
  return EngineCore::script_command(Script::kAcquireAndMark, eval, keys, args);
}

void AcquireOperation::on_reply(std::size_t node, std::uint32_t cookie, NodeReply reply) {
  if (cookie != attempt_ || phase_ != Phase::kVoting) return;  // a straggler: already decided
  if (marking_ && core_->resend_on_noscript(
                      node, reply, [this] { return attempt_command(true, /*eval=*/true); },
                      shared_from_this(), attempt_)) {
    return;
  }
  tally_->record(node,
                 node < answers_.size() ? vote_for_set(reply, answers_[node]) : Vote::kFailed);
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
    attempt_failed(make_error(ErrorCode::kUnavailable, tally_->shortfall()));
  } else {
    attempt_failed(make_error(ErrorCode::kLocked, "the lock is held by another lease"));
  }
}

void AcquireOperation::on_quorum() {
  if (abandoned_) {
    attempt_failed(make_error(ErrorCode::kCancelled, "the acquire was cancelled"));
    return;
  }
  TokenSource* tokens = core_->tokens();
  token_requested_ = Clock::now();
  if (tokens == nullptr) {
    on_token(attempt_, std::uint64_t{0});
    return;
  }
  phase_ = Phase::kDrawingToken;
  token_floor_ = core_->token_floor();  // what the token must be above, known before the draw
  // The token source may answer on another thread: come back to the strand.
  tokens->next(
      request_.name, [self = shared_from_this(), attempt = attempt_](Result<std::uint64_t> token) {
        asio::dispatch(self->core_->strand(), [self, attempt, token = std::move(token)]() mutable {
          self->on_token(attempt, std::move(token));
        });
      });
}

void AcquireOperation::on_token(std::uint32_t attempt, Result<std::uint64_t> token) {
  if (attempt != attempt_ || phase_ == Phase::kDone) return;
  token_draw_ = Clock::now() - token_requested_;
  if (!token.ok()) {
    attempt_failed(make_error(ErrorCode::kUnavailable, "fencing token: " + token.error().message));
    return;
  }
  if (abandoned_) {  // won while its caller went away: nobody would ever release it
    attempt_failed(make_error(ErrorCode::kCancelled, "the acquire was cancelled"));
    return;
  }
  // The validity check covers the token draw: lease order then equals token order.
  const auto validity = reportable_validity(remaining_validity(
      request_.ttl, Clock::now() - attempt_started_, core_->options().drift_factor));
  if (validity < std::chrono::milliseconds(1)) {
    attempt_failed(make_error(ErrorCode::kUnavailable,
                              "the quorum took longer than the ttl allows; no validity left"));
    return;
  }
  // The registry's verdict may have changed while the quorum and the draw were out; and the token
  // must be above what the lock nodes have seen handed out.
  if (auto refusal = core_->token_refusal(token.value(), token_floor_)) {
    attempt_failed(make_error(ErrorCode::kUnavailable, std::move(*refusal)));
    return;
  }
  Lease lease;
  lease.name = request_.name;
  lease.proof = lease_proof(value_, token.value(), request_.owner);
  lease.token = token.value();
  lease.ttl = request_.ttl;
  lease.validity = validity;
  lease.started = attempt_started_;
  lease.waited = std::chrono::floor<std::chrono::milliseconds>(attempt_started_ - call_started_);
  failpoints::on_grant_decided();
  complete(std::move(lease));
}

void AcquireOperation::attempt_failed(Error error) {
  core_->release_everywhere(request_.name, value_);
  if (abandoned_) {
    complete(make_error(ErrorCode::kCancelled, "the acquire was cancelled"));
    // It may have held the lock a moment: the next waiter need not sleep out its retry delay.
    core_->wake_first_waiter(request_.name, {});
    return;
  }
  // Only a held lock is worth waiting for. An outage (too few nodes answered, no token, no
  // validity left) is answered at once: waiting it out would hold the caller for its whole budget.
  const bool retryable = error.code == ErrorCode::kLocked;
  const auto budget_end = call_started_ + request_.wait;
  const auto now = Clock::now();
  if (!retryable || core_->stopped() || now >= budget_end) {
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

void AcquireOperation::sleep_until_retry(Error error) {
  join_queue();
  const EngineOptions& options = core_->options();
  const auto now = Clock::now();
  const auto budget_end = call_started_ + request_.wait;
  // Until the holder's keys expire, if the refusal tells when (a release wakes it earlier);
  // otherwise — and at most every kLongestExpirySleep, in case an announcement was lost — the
  // random retry delay.
  Clock::duration pause = retry_delay(options.retry_delay, options.retry_jitter, core_->rng());
  if (const auto frees_in = time_until_grantable(answers_, core_->quorum(), options.drift_factor)) {
    // Spread by up to kExpirySpread: waiters of several instances that wake at the same expiry
    // would otherwise split the nodes between them more often than not.
    const auto spread = std::uniform_int_distribution<std::int64_t>(
        0, std::chrono::microseconds(kExpirySpread).count())(core_->rng());
    pause = std::min<Clock::duration>(*frees_in + std::chrono::microseconds(spread),
                                      std::max<Clock::duration>(pause, kLongestExpirySleep));
  }
  answers_.clear();  // a wake-up without a new attempt knows nothing new
  const auto delay = std::min<Clock::duration>(pause, budget_end - now);
  phase_ = Phase::kWaitingToRetry;
  retry_timer_.expires_after(delay);
  retry_timer_.async_wait([self = shared_from_this(),
                           error = std::move(error)](const boost::system::error_code& ec) mutable {
    if (self->phase_ != Phase::kWaitingToRetry) return;  // woken by a release, or done
    if (ec == asio::error::operation_aborted || self->core_->stopped()) {
      self->complete(make_error(ErrorCode::kUnavailable, "the engine is stopping"));
      return;
    }
    // The budget ran out while queued. An acquire that queued behind others without trying yet
    // still makes its one attempt: the lock may well be free by now.
    if (Clock::now() >= self->call_started_ + self->request_.wait && self->attempt_ > 0) {
      self->complete(std::move(error));
      return;
    }
    self->attempt();
  });
}

bool AcquireOperation::wake_now() {
  switch (phase_) {
    case Phase::kDone:
      return false;
    case Phase::kWoken:
      return true;  // about to try anyway
    case Phase::kVoting:
    case Phase::kDrawingToken:
      woken_during_attempt_ = true;
      return true;
    case Phase::kWaitingToRetry:
      break;
  }
  retry_timer_.cancel();
  retry_now();
  return true;
}

void AcquireOperation::join_queue() {
  if (queued_) return;
  queued_ = true;
  core_->add_waiter(request_.name, std::weak_ptr<Waiter>(shared_from_this()));
}

void AcquireOperation::retry_now() {
  phase_ = Phase::kWoken;
  // Posted: never from inside the releasing operation's (or a hiredis) call chain.
  asio::post(core_->strand(), [self = shared_from_this()] {
    if (self->phase_ == Phase::kWoken) self->attempt();
  });
}

void AcquireOperation::cancel_from_any_thread() {
  asio::post(core_->strand(), [self = shared_from_this()] { self->abandon(); });
}

void AcquireOperation::abandon() {
  switch (phase_) {
    case Phase::kDone:
      return;
    case Phase::kVoting:
    case Phase::kDrawingToken:
      abandoned_ = true;
      return;  // decided when the attempt resolves
    case Phase::kWaitingToRetry:
      retry_timer_.cancel();
      break;
    case Phase::kWoken:
      break;  // the posted attempt sees kDone and does nothing
  }
  complete(make_error(ErrorCode::kCancelled, "the acquire was cancelled"));
}

void AcquireOperation::cancel() {
  if (phase_ == Phase::kWaitingToRetry) retry_timer_.cancel();
}

void AcquireOperation::complete(Result<Lease> result) {
  if (phase_ == Phase::kDone) return;
  phase_ = Phase::kDone;
  core_->untrack(this);
  if (queued_) core_->remove_waiter(request_.name, this);
  core_->report(OperationKind::kAcquire,
                result.ok() ? std::nullopt : std::optional<ErrorCode>(result.error().code),
                Clock::now() - call_started_, attempt_, tally_ ? &*tally_ : nullptr, token_draw_);
  core_->complete_later(std::move(done_), std::move(result));
  core_->operation_finished();
}

}  // namespace fencelock::storage
