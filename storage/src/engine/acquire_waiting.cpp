// AcquireOperation between attempts (acquire_operation.h): reading when the holder's lease ends,
// sleeping until then or until a release wakes it, the waiter queues, cancellation and the end.
#include <algorithm>
#include <boost/asio/post.hpp>
#include <random>
#include <utility>

#include "engine/acquire_operation.h"
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

}  // namespace

void AcquireOperation::note_refusal() {
  const auto frees_in = time_until_grantable(answers_, core_->quorum());
  grantable_at_.reset();
  if (frees_in) grantable_at_ = Clock::now() + *frees_in;
}

bool AcquireOperation::read_refusers_expiry() {
  if (shape_->lock_key() == nullptr || core_->stopped()) return false;
  std::size_t refused = 0;
  for (std::size_t node = 0; node < answers_.size(); ++node) {
    if (tally_->is_voter(node) && tally_->vote_of(node) == Vote::kNo) ++refused;
  }
  // A node still to answer is asked only when the refusals alone cannot make a quorum: its read
  // queues behind its attempt (and the release), so it waits out a slow node's answer.
  const bool ask_pending = refused < core_->quorum();
  std::vector<std::size_t> asked;
  for (std::size_t node = 0; node < answers_.size(); ++node) {
    const Vote vote = tally_->is_voter(node) ? tally_->vote_of(node) : Vote::kFailed;
    if (vote == Vote::kNo || (ask_pending && vote == Vote::kPending)) asked.push_back(node);
  }
  return read_expiry(asked);
}

bool AcquireOperation::read_expiry_everywhere() {
  if (shape_->lock_key() == nullptr) return false;
  std::vector<std::size_t> voters;
  for (std::size_t node = 0; node < tally_->node_count(); ++node) {
    if (tally_->is_voter(node)) voters.push_back(node);
  }
  answers_.assign(tally_->node_count(), NodeAnswer{});
  return read_expiry(voters);
}

bool AcquireOperation::read_expiry(const std::vector<std::size_t>& nodes) {
  const std::string* key = shape_->lock_key();
  if (key == nullptr || nodes.empty() || core_->stopped()) return false;
  // Whatever it learns, this acquire will not try again: the queues and the wake-ups it holds go
  // on to the next waiter now, not after the reads (up to a node timeout).
  for (const std::string& woken_by : pending_wakeups_) core_->waiters().wake_after(woken_by, this);
  pending_wakeups_.clear();
  leave_queues(/*granted=*/false);
  // The phase and the count first: a reply never arrives from inside send (redis_node.h), but
  // nothing here should depend on it.
  phase_ = Phase::kReadingExpiry;
  expiry_reads_pending_ = nodes.size();
  const RespCommand inspect =
      EngineCore::script_command(Script::kInspect, /*eval=*/false, std::span(key, 1), {});
  answers_.resize(tally_->node_count());
  for (const std::size_t node : nodes) {
    answers_[node] = {};
    core_->send_to(node, inspect, shared_from_this(), attempt_ | kExpiryRead);
  }
  return true;
}

void AcquireOperation::on_expiry_read(std::size_t node, const NodeReply& reply) {
  if (core_->resend_on_noscript(
          node, reply,
          [this] {
            return EngineCore::script_command(Script::kInspect, /*eval=*/true,
                                              std::span(shape_->lock_key(), 1), {});
          },
          shared_from_this(), attempt_ | kExpiryRead)) {
    return;
  }
  // The inspect script: {value or nil, pttl}. The holder is the value's lease id (its first
  // kLeaseIdLength characters, before any mark, as the acquire scripts answer it): keys
  // of different holders (a split vote) must not add up to a quorum.
  if (node < answers_.size() && reply.is_array(2) && reply.elements[1].is_integer()) {
    const NodeReply& value = reply.elements[0];
    NodeAnswer& answer = answers_[node];
    if (value.is_string() && reply.elements[1].integer >= 0) {
      answer.kind = NodeAnswer::Kind::kHeld;
      answer.holder = value.text.substr(0, std::min(kLeaseIdLength, value.text.find('#')));
      answer.remaining = std::chrono::milliseconds(reply.elements[1].integer);
    } else if (value.is_nil()) {  // gone since it refused
      answer.kind = NodeAnswer::Kind::kFree;
    }
  }
  if (--expiry_reads_pending_ != 0) return;
  note_refusal();
  complete(last_refusal_.value_or(held_error()));
}

void AcquireOperation::sleep_until_retry(Error error) {
  join_queue();
  shape_->sleeping();
  const EngineOptions& options = core_->options();
  const auto now = Clock::now();
  const auto budget_end = call_started_ + target_.wait;
  // Until the holder's keys expire, if the refusal tells when (a release wakes it earlier);
  // otherwise — and at most every kLongestExpirySleep, in case an announcement was lost — the
  // random retry delay.
  Clock::duration pause = retry_delay(options.retry_delay, options.retry_jitter, core_->rng());
  if (grantable_at_) {  // the refusal that led here (note_refusal), if it told
    const auto frees_in = std::max<Clock::duration>(*grantable_at_ - now, Clock::duration{0});
    // Spread by up to kExpirySpread: waiters of several instances that wake at the same expiry
    // would otherwise split the nodes between them more often than not.
    const auto spread = std::uniform_int_distribution<std::int64_t>(
        0, std::chrono::microseconds(kExpirySpread).count())(core_->rng());
    pause = std::min<Clock::duration>(frees_in + std::chrono::microseconds(spread),
                                      std::max<Clock::duration>(pause, kLongestExpirySleep));
  }
  answers_.clear();  // a wake-up without a new attempt knows nothing new
  // Only the first waiter of a queue watches the nodes (the expiry sleep, the retry delay): the
  // others sleep until a release or a hand-on wakes them, or their budget ends. With thousands of
  // waiters on one name, each polling every 2 s at most, the nodes would serve thousands of refused
  // attempts per second for nothing. A waiter that stops being first hands that on (finish()).
  if (!first_in_a_queue()) pause = budget_end - now;
  last_refusal_ = std::move(error);
  phase_ = Phase::kWaitingToRetry;
  arm_retry_timer(std::min<Clock::duration>(pause, budget_end - now));
}

void AcquireOperation::arm_retry_timer(Clock::duration delay) {
  // A timer armed again (become_first) cancels the earlier wait: its handler sees another number.
  const std::uint32_t sleep = ++sleep_;
  retry_timer_.expires_after(delay);
  retry_timer_.async_wait([self = shared_from_this(), sleep](const boost::system::error_code& ec) {
    // Woken by a release, done, or armed again.
    if (self->phase_ != Phase::kWaitingToRetry || sleep != self->sleep_) return;
    if (ec == asio::error::operation_aborted || self->core_->stopped()) {
      self->complete(make_error(ErrorCode::kUnavailable, "the engine is stopping"));
      return;
    }
    // The budget ran out while queued. An acquire that queued behind others without trying yet
    // still makes its one attempt: the lock may well be free by now.
    if (Clock::now() >= self->call_started_ + self->target_.wait && self->attempt_ > 0) {
      // What its last refusal said may be stale: a waiter that is not first has not asked since
      // its first refusal, and a time that has passed says nothing. A lock then reads its
      // holder's expiry once more for the answer's retry_after (the first waiter's answers are
      // at most one sleep old, and a release would have woken it).
      const bool stale =
          !self->first_in_a_queue() || !self->grantable_at_ || *self->grantable_at_ <= Clock::now();
      if (stale && self->read_expiry_everywhere()) return;
      self->complete(self->last_refusal_.value_or(self->held_error()));
      return;
    }
    self->attempt();
  });
}

void AcquireOperation::become_first(Clock::duration frees_in) {
  if (phase_ != Phase::kWaitingToRetry) return;  // awake: it looks again when it next sleeps
  const auto now = Clock::now();
  grantable_at_ = now + frees_in;  // the grant that made it first: its holder's expiry
  const auto budget_left = call_started_ + target_.wait - now;
  arm_retry_timer(std::max<Clock::duration>(
      Clock::duration::zero(),
      std::min<Clock::duration>({frees_in, Clock::duration(kLongestExpirySleep), budget_left})));
}

Waiter::Wake AcquireOperation::wake_now(std::string_view name) {
  const bool several_queues = shape_->several_queues();
  switch (phase_) {
    case Phase::kDone:
    case Phase::kReadingExpiry:  // refused for good: only its answer is still being written
      return Wake::kFinished;
    case Phase::kWoken:
    case Phase::kVoting:
    case Phase::kDrawingToken:
    case Phase::kRepeating:
      if (several_queues) {
        // Passed on (it may not need that name, or that slot), but remembered: should its attempt
        // be refused because it reached a majority before this release did, nothing else would
        // wake it (another engine's release is announced once per node, and the later copies
        // only reach a waiter that took the first).
        if (phase_ != Phase::kDrawingToken) note(released_while_out_, name);
        return Wake::kPassed;
      }
      if (phase_ != Phase::kWoken) woken_during_attempt_ = true;
      note_wakeup(name);
      return Wake::kAlreadyAwake;
    case Phase::kWaitingToRetry:
      break;
  }
  if (shape_->sleeps_on(name)) return Wake::kPassed;  // a set waits for another name still
  note_wakeup(name);
  retry_timer_.cancel();
  retry_now();
  return Wake::kTaken;
}

void AcquireOperation::note_wakeup(std::string_view name) {
  note(pending_wakeups_, name);
}

void AcquireOperation::note(std::vector<std::string>& names, std::string_view name) {
  if (std::find(names.begin(), names.end(), name) == names.end()) names.emplace_back(name);
}

void AcquireOperation::join_queue() {
  if (queued_) return;
  queued_ = true;
  for (const auto& queue : queues())
    core_->waiters().add(queue, std::weak_ptr<Waiter>(shared_from_this()));
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
    case Phase::kRepeating:
      abandoned_ = true;
      return;  // decided when the attempt resolves
    case Phase::kWaitingToRetry:
      retry_timer_.cancel();
      break;
    case Phase::kWoken:          // the posted attempt sees kDone and does nothing
    case Phase::kReadingExpiry:  // its attempt was released already; the reads' answers are ignored
      break;
  }
  complete(make_error(ErrorCode::kCancelled, "the acquire was cancelled"));
}

void AcquireOperation::cancel() {
  if (phase_ == Phase::kWaitingToRetry) retry_timer_.cancel();
}

void AcquireOperation::finish(std::optional<ErrorCode> error) {
  phase_ = Phase::kDone;
  core_->untrack(this);
  leave_queues(/*granted=*/!error);
  shape_->finished(*core_, facts());
  core_->report(OperationKind::kAcquire, error, Clock::now() - call_started_, attempt_,
                tally_ ? &*tally_ : nullptr, token_draw_);
}

void AcquireOperation::leave_queues(bool granted) {
  if (queued_) {
    // The next waiter becomes the first, the one that watches the nodes. Granted here: it sleeps
    // to this grant's expiry (a release wakes it sooner), with no attempt that would only be
    // refused. Otherwise — or granted a read, which the next may share — the lock's state is not
    // known: it is woken, asks the nodes and sleeps to what they answer.
    const auto grant_expires_in =
        attempt_started_ + target_.ttl + std::chrono::milliseconds(1) - Clock::now();
    for (const auto& queue : queues()) {
      if (core_->waiters().is_first(queue, this)) {
        if (granted && !shape_->shared_grant()) {
          core_->waiters().promote_after(queue, this, grant_expires_in);
        } else {
          core_->waiters().wake_after(queue, this);
        }
      }
      core_->waiters().remove(queue, this);
    }
    queued_ = false;
  }
}

void AcquireOperation::complete(Error error) {
  if (phase_ == Phase::kDone) return;
  // A refusal says when to try again if its answers told, and that time is still ahead (a stale
  // one, a set's or permit's that slept out its budget, says nothing).
  if (error.code == ErrorCode::kLocked && grantable_at_ && *grantable_at_ > Clock::now()) {
    error.retry_after =
        std::max(std::chrono::milliseconds(0),
                 std::chrono::ceil<std::chrono::milliseconds>(*grantable_at_ - Clock::now()));
  }
  // Wake-ups that came after its last attempt went out and that no attempt will use (its budget
  // ran out, it was cancelled, the engine stops): the next waiter of each name gets them.
  for (const std::string& woken_by : pending_wakeups_) core_->waiters().wake_after(woken_by, this);
  pending_wakeups_.clear();
  finish(error.code);
  shape_->fail(*core_, std::move(error));
  core_->operation_finished();
}

}  // namespace fencelock::storage
