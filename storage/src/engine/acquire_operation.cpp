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

namespace {

// The acquire scripts answer 1, or {0, holder, pttl} when refused by a holder. `answer` learns
// what the node said about the holder (expiry_wait.h).
Vote vote_for_set(const NodeReply& reply, NodeAnswer& answer) {
  using Kind = NodeReply::Kind;
  if (reply.kind == Kind::kInteger && reply.integer == 1) {
    answer.kind = NodeAnswer::Kind::kFree;
    return Vote::kYes;
  }
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

std::string lock_held_message(const AcquireTarget& target) {
  switch (target.kind) {
    case AcquireTarget::Kind::kLock:
      if (target.rw == RwMode::kRead)
        return "the read/write lock is held by a writer, or one waits";
      if (target.rw == RwMode::kWrite) return "the read/write lock is held";
      break;
    case AcquireTarget::Kind::kSet:
      return "a name of the set is held by another lease";
    case AcquireTarget::Kind::kPermit:
      return "every permit of the semaphore is held";
  }
  return "the lock is held by another lease";
}

std::string permit_slot_name(std::string_view semaphore, std::uint32_t slot) {
  std::string name(semaphore);
  name.append("#permit:").append(std::to_string(slot));
  return name;
}

std::string permit_config_name(std::string_view semaphore) {
  return std::string(semaphore) + "#permits";
}

std::string rw_state_name(std::string_view name) {
  return std::string(name) + "#rw";
}

std::string rw_lease_name(std::string_view name, std::string_view lease_id) {
  return rw_state_name(name).append(":").append(lease_id);
}

std::string rw_writer_name(std::string_view name) {
  return rw_state_name(name) + "-writer";
}

AcquireOperation::AcquireOperation(std::shared_ptr<EngineCore> core, AcquireTarget target,
                                   std::string value, Handler done)
    : core_(std::move(core)),
      target_(std::move(target)),
      value_(std::move(value)),
      value_tail_(
          lease_value_tail(target_.request.empty() ? "" : "p" + target_.request, target_.holder)),
      done_(std::move(done)),
      retry_timer_(core_->strand()) {
  if (target_.kind == AcquireTarget::Kind::kPermit) {
    for (std::uint32_t i = 0; i < target_.permits; ++i)
      slot_names_.push_back(permit_slot_name(name(), i));
  }
  if (target_.rw) rw_queue_.push_back(rw_state_name(name()));
  set_keys();
}

void AcquireOperation::set_keys() {
  keys_.clear();
  fence_keys_.clear();
  for (const auto& n : target_.names) fence_keys_.push_back(core_->key_of(fence_name(n)));
  if (target_.rw) {
    keys_.push_back(core_->key_of(rw_lease_name(name(), value_.substr(0, kLeaseIdLength))));
    keys_.push_back(core_->key_of(rw_state_name(name())));
    keys_.push_back(core_->key_of(rw_writer_name(name())));
    return;
  }
  if (target_.kind != AcquireTarget::Kind::kPermit) {
    for (const auto& n : target_.names) keys_.push_back(core_->key_of(n));
    return;
  }
  keys_.push_back(core_->key_of(permit_config_name(name())));
  for (const auto& slot : slot_names_) keys_.push_back(core_->key_of(slot));
}

void AcquireOperation::start() {
  call_started_ = Clock::now();
  core_->operation_started();
  if (target_.kind == AcquireTarget::Kind::kPermit) {
    // The first slot at random: permit callers spread over the slots instead of all trying 0.
    slot_ = std::uniform_int_distribution<std::uint32_t>(0, target_.permits - 1)(core_->rng());
  }
  core_->track(this, weak_from_this());
  // Others already wait for one of these names: queue behind them instead of barging in (no
  // starvation). A permit queues only once every slot has waiters (a free slot is worth a try).
  if (target_.wait.count() > 0 && !core_->stopped()) {
    const bool permit = target_.kind == AcquireTarget::Kind::kPermit;
    bool behind = permit;
    for (const auto& queue : queues()) {
      const bool waited_for = core_->waiters().has_waiters(queue);
      behind = permit ? behind && waited_for : behind || waited_for;
    }
    // A request's repeat probes first: an attempt that takes nothing, but finds an earlier grant.
    probing_ = behind && !target_.request.empty();
    if (behind && !probing_) {
      sleep_until_retry(make_error(ErrorCode::kLocked, lock_held_message(target_)));
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
  took_writer_key_ = took_writer_key_ || (target_.rw == RwMode::kWrite && marking_);
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
  if (target_.kind == AcquireTarget::Kind::kSet) name_free_votes_.assign(target_.names.size(), 0);
  if (target_.kind == AcquireTarget::Kind::kPermit) {
    mismatch_.reset();
    free_votes_.assign(target_.permits, 0);
    soonest_votes_.assign(target_.permits, 0);
  }
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
  core_->broadcast(attempt_command(/*eval=*/false), shared_from_this(), attempt_);
  core_->confirm_votes(shared_from_this(), attempt_ | kEvictionsRead);
}

std::string AcquireOperation::writer_waiting_arg() const {
  if (target_.rw != RwMode::kWrite || !marking_) return "0";
  // Renewed by each attempt; a writer that went away keeps readers out for at most this long.
  constexpr std::chrono::milliseconds kLongestWriterWait{3000};
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(call_started_ + target_.wait - Clock::now());
  const auto hold = std::min(left, std::max(target_.ttl, kLongestWriterWait));
  return std::to_string(std::max<std::int64_t>(hold.count(), 1));
}

std::string AcquireOperation::token_arg(std::size_t index) const {
  if (core_->tokens() == nullptr) return {};  // no token, no fence
  return std::to_string(tokens_[index]);
}

RespCommand AcquireOperation::attempt_command(bool eval) const {
  const auto ttl = std::to_string(target_.ttl.count());
  const std::string mark = marking_ ? core_->engine_id() : std::string();
  std::vector<std::string> keys = keys_;
  keys.insert(keys.end(), fence_keys_.begin(), fence_keys_.end());
  switch (target_.kind) {
    case AcquireTarget::Kind::kLock: {
      const std::string token = token_arg(0);
      if (target_.rw) {
        const std::string args[] = {written_lease_value(value_, token, value_tail_),
                                    ttl,
                                    mark,
                                    token,
                                    *target_.rw == RwMode::kWrite ? "w" : "r",
                                    writer_waiting_arg()};
        return EngineCore::script_command(Script::kAcquireRw, eval, keys, args);
      }
      const std::string args[] = {written_lease_value(value_, token, value_tail_),
                                  ttl,
                                  mark,
                                  token,
                                  target_.request,
                                  probing_ ? "1" : ""};
      // The request's digest and the probe flag go only to the script that reads them.
      const bool request = !target_.revoke && !target_.request.empty();
      if (target_.revoke) keys.push_back(revoke_saved_key());
      const Script script = target_.revoke ? Script::kRevokeLock
                            : request      ? Script::kAcquireLockRequest
                                           : Script::kAcquireLock;
      return EngineCore::script_command(script, eval, keys,
                                        std::span<const std::string>(args, request ? 6 : 4));
    }
    case AcquireTarget::Kind::kSet: {
      std::vector<std::string> args = {value_, ttl, mark};
      for (std::size_t i = 0; i < target_.names.size(); ++i) args.push_back(token_arg(i));
      args.push_back(value_tail_);
      return EngineCore::script_command(Script::kAcquireSet, eval, keys, args);
    }
    case AcquireTarget::Kind::kPermit:
      break;
  }
  const std::string token = token_arg(0);
  const std::string args[] = {written_lease_value(value_, token, value_tail_), ttl, mark,
                              std::to_string(slot_), token};
  return EngineCore::script_command(Script::kAcquirePermit, eval, keys, args);
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
          node, reply, [this] { return attempt_command(/*eval=*/true); }, shared_from_this(),
          attempt_)) {
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
    switch (target_.kind) {
      case AcquireTarget::Kind::kLock:
        vote = note_repeat(node, reply) || probe_found_free(node, reply)
                   ? Vote::kNo
                   : vote_for_set(reply, answers_[node]);
        break;
      case AcquireTarget::Kind::kSet:
        vote = set_vote(node, reply);
        break;
      case AcquireTarget::Kind::kPermit:
        vote = permit_vote(node, reply);
        break;
    }
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
  if (reply.kind != NodeReply::Kind::kInteger || reply.integer != 1) confirmation.refused = true;
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
  } else if (mismatch_) {
    attempt_failed(make_error(ErrorCode::kPermitsMismatch,
                              "the semaphore is live with " + *mismatch_ +
                                  " permits; it takes another count only once none is held"));
  } else {
    attempt_failed(make_error(ErrorCode::kLocked, lock_held_message(target_)));
  }
}

Vote AcquireOperation::set_vote(std::size_t node, const NodeReply& reply) {
  using Kind = NodeReply::Kind;
  if (reply.kind != Kind::kArray || reply.elements.size() != 4) {
    const Vote vote = vote_for_set(reply, answers_[node]);
    if (vote == Vote::kYes) {
      for (auto& votes : name_free_votes_) ++votes;
    }
    return vote;
  }
  // {0, holder, pttl, {held key indices, 1-based}}: holder and pttl are the key that frees last.
  std::vector<bool> held(target_.names.size(), false);
  for (const NodeReply& index : reply.elements[3].elements) {
    if (index.kind == Kind::kInteger && index.integer >= 1 &&
        static_cast<std::size_t>(index.integer) <= held.size())
      held[static_cast<std::size_t>(index.integer) - 1] = true;
  }
  for (std::size_t i = 0; i < held.size(); ++i) {
    if (!held[i]) ++name_free_votes_[i];
  }
  NodeReply head = reply;
  head.elements.resize(3);
  return vote_for_set(head, answers_[node]);
}

void AcquireOperation::hand_on_wakeups() {
  blockers_.clear();
  for (std::size_t i = 0; i < target_.names.size() && i < name_free_votes_.size(); ++i) {
    if (name_free_votes_[i] < core_->quorum()) blockers_.push_back(target_.names[i]);
  }
  // No name held on enough nodes to keep a quorum out (it lost to another attempt, or a split
  // vote): blockers_ stays empty — not known what to wait for, so any release of its names wakes
  // it. A name found free goes on to the next waiter of that name if a release of it woke this
  // one, or if this one is that name's first waiter (the one that watches it: sleeping on other
  // names, it would keep a free name from everyone behind it).
  for (const std::string& name : target_.names) {
    if (std::find(blockers_.begin(), blockers_.end(), name) != blockers_.end()) continue;
    const bool woken_by = std::find(consumed_wakeups_.begin(), consumed_wakeups_.end(), name) !=
                          consumed_wakeups_.end();
    if (woken_by || core_->waiters().is_first(name, this)) core_->waiters().wake_after(name, this);
  }
  consumed_wakeups_.clear();
}

bool AcquireOperation::first_in_a_queue() const {
  return std::any_of(queues().begin(), queues().end(), [this](const std::string& queue) {
    return core_->waiters().is_first(queue, this);
  });
}

Vote AcquireOperation::permit_vote(std::size_t node, const NodeReply& reply) {
  using Kind = NodeReply::Kind;
  if (reply.kind == Kind::kArray && reply.elements.size() == 2 &&
      reply.elements[0].kind == Kind::kInteger && reply.elements[0].integer == -2) {
    mismatch_ = reply.elements[1].text;  // {-2, "<live N>"}
    return Vote::kNo;
  }
  if (reply.kind != Kind::kArray || reply.elements.size() != 5) {
    return vote_for_set(reply, answers_[node]);  // 1, or an error
  }
  // {0, holder, pttl, {free slots}, soonest slot}: holder and pttl are the soonest slot's.
  NodeReply head = reply;
  head.elements.resize(3);
  const Vote vote = vote_for_set(head, answers_[node]);
  for (const NodeReply& free : reply.elements[3].elements) {
    if (free.kind == Kind::kInteger && free.integer >= 0 && free.integer < target_.permits)
      ++free_votes_[static_cast<std::size_t>(free.integer)];
  }
  const NodeReply& soonest = reply.elements[4];
  if (soonest.kind == Kind::kInteger && soonest.integer >= 0 && soonest.integer < target_.permits)
    ++soonest_votes_[static_cast<std::size_t>(soonest.integer)];
  return vote;
}

std::optional<std::uint32_t> AcquireOperation::free_slot_to_try() {
  const auto most = [](const std::vector<std::uint32_t>& votes) {
    return static_cast<std::uint32_t>(std::max_element(votes.begin(), votes.end()) - votes.begin());
  };
  const std::uint32_t free = most(free_votes_);
  if (free != slot_ && free_votes_[free] >= core_->quorum()) return free;
  // None free: after the sleep, try the slot that frees first on most nodes; the expiry sleep
  // only knows its holder if the answers agree on one (otherwise the retry delay paces it).
  if (soonest_votes_[most(soonest_votes_)] > 0) slot_ = most(soonest_votes_);
  return std::nullopt;
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
  if (target_.revoke) settle_revoke();
  const auto waited =
      std::chrono::floor<std::chrono::milliseconds>(attempt_started_ - call_started_);
  finish(std::nullopt);
  switch (target_.kind) {
    case AcquireTarget::Kind::kLock: {
      Lease lease;
      lease.name = std::move(target_.names.front());
      lease.proof = target_.rw
                        ? lease_proof_of_text(
                              value_, rw_claim_text(tokens_.front(), *target_.rw, target_.owner))
                        : lease_proof(value_, tokens_.front(), target_.owner);
      lease.token = tokens_.front();
      lease.ttl = target_.ttl;
      lease.validity = validity;
      lease.started = attempt_started_;
      lease.waited = waited;
      lease.repeated = !takeover_head_.empty();
      core_->complete_later(std::get<RedlockEngine::AcquireHandler>(std::move(done_)),
                            Result<Lease>(std::move(lease)));
      break;
    }
    case AcquireTarget::Kind::kSet: {
      LockSetLease lease;
      lease.proof =
          lease_proof_of_text(value_, set_claim_text(tokens_, target_.names, target_.owner));
      lease.names = std::move(target_.names);
      lease.tokens = std::move(tokens_);
      lease.ttl = target_.ttl;
      lease.validity = validity;
      lease.started = attempt_started_;
      lease.waited = waited;
      core_->complete_later(std::get<RedlockEngine::LockSetHandler>(std::move(done_)),
                            Result<LockSetLease>(std::move(lease)));
      break;
    }
    case AcquireTarget::Kind::kPermit: {
      Permit permit;
      permit.name = std::move(target_.names.front());
      permit.permits = target_.permits;
      permit.slot = slot_;
      permit.proof = lease_proof_of_text(
          value_, permit_claim_text(tokens_.front(), target_.permits, slot_, target_.owner));
      permit.token = tokens_.front();
      permit.ttl = target_.ttl;
      permit.validity = validity;
      permit.started = attempt_started_;
      permit.waited = waited;
      core_->complete_later(std::get<RedlockEngine::PermitHandler>(std::move(done_)),
                            Result<Permit>(std::move(permit)));
      break;
    }
  }
  core_->operation_finished();
}

void AcquireOperation::attempt_failed(Error error) {
  probing_ = false;  // only a waiting repeat's first attempt probes
  // A permit's attempt wrote (at most) its slot key; the config key may stay: it only lives as
  // long as a permit's ttl, and a count check looks at the slots themselves.
  if (target_.kind == AcquireTarget::Kind::kPermit) {
    core_->release_everywhere(std::span<const std::string>(&keys_[1 + slot_], 1), value_);
  } else if (target_.rw) {  // its own lease key; the state key's entry goes with it
    core_->release_everywhere(std::span<const std::string>(keys_.data(), 1), value_);
  } else if (target_.revoke) {
    undo_revoke();
  } else {
    core_->release_everywhere(keys_, value_);
  }
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
  if (target_.kind == AcquireTarget::Kind::kSet && error.code == ErrorCode::kLocked)
    hand_on_wakeups();
  if (error.code == ErrorCode::kLocked) {
    note_refusal();
    use_releases_while_out();
  }
  // A permit refused on its slot while another slot is free on a quorum tries that one at once
  // (at most once per slot before it sleeps or gives up: the answers may keep shifting).
  if (target_.kind == AcquireTarget::Kind::kPermit && error.code == ErrorCode::kLocked &&
      !core_->stopped()) {
    if (const auto free = free_slot_to_try(); free && hops_ < target_.permits) {
      ++hops_;
      slot_ = *free;
      retry_now();
      return;
    }
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
