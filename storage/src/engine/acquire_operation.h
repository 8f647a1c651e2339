// One acquire call — of any shape (acquire_shape.h: a lock, a revoke, a read/write grant, a lock
// set, a semaphore permit) — run as attempts (tokens → one script on every node → quorum →
// validity) until granted, refused with no wait budget left, cancelled, or the engine stops. The
// why of each rule is in docs/architecture.md, "Algorithm" and "The fence".
// - A grant's token is above every token granted before it started: an attempt refused by fences
//   (not by a holder) tries again at once above them, at most kFenceRetries times in a row, then
//   answers kUnavailable (the token store is behind the lock nodes).
// - Every failed attempt is cleaned up on every node, queued behind its own script on each
//   connection; a revoke's cleanup puts back what it overwrote (lua_revoke_scripts.h).
// - Answers to an earlier attempt (its number is the reply cookie) are ignored.
// - An attempt that will wait marks the holder's value with this engine's id, so that releases
//   through other engines are announced to it.
// - A refusal (kLocked) carries retry_after, from the refusing nodes' own answers (expiry_wait.h).
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/acquire_shape.h"
#include "engine/engine_core.h"
#include "engine/expiry_wait.h"
#include "engine/fences.h"
#include "fencelock/storage/lease.h"
#include "fencelock/storage/redlock_engine.h"

namespace fencelock::storage {

// What one acquire call tries to take, whatever its shape (acquire_shape.h).
struct AcquireTarget {
  // The names whose tokens are drawn: the lock's name, the set's names in canonical order, or the
  // semaphore's name.
  std::vector<std::string> names;
  std::chrono::milliseconds ttl{0};
  std::chrono::milliseconds wait{0};
  std::string owner;
  std::string holder;  // AcquireRequest::holder, checked
  // A lock's: request_digest() of AcquireRequest::request_id, or "" for none. With one, an attempt
  // that finds this request's earlier grant on a quorum takes it over and answers it again.
  std::string request;
};

class AcquireOperation : public ReplySink,
                         public Cancellable,
                         public Waiter,
                         public detail::CancellableAcquire,
                         public std::enable_shared_from_this<AcquireOperation> {
 public:
  // `value`: the lease value (lease_secret.h); `shape` answers the grant.
  AcquireOperation(std::shared_ptr<EngineCore> core, AcquireTarget target, std::string value,
                   std::unique_ptr<AcquireShape> shape);

  void start();  // on the strand
  // AcquireTicket::cancel: abandon() on the strand.
  void cancel_from_any_thread() override;
  // The caller gave up: complete with kCancelled, releasing a grant that an attempt in flight may
  // still win. On the strand.
  void abandon();

 private:
  using Clock = std::chrono::steady_clock;
  enum class Phase {
    kVoting,
    kDrawingToken,
    kWaitingToRetry,
    kWoken,
    kReadingExpiry,
    kRepeating,
    kDone
  };
  // The cookie of an expiry read (PTTL) of attempt n: n | kExpiryRead. Attempts never reach it.
  static constexpr std::uint32_t kExpiryRead = std::uint32_t{1} << 31;
  // The cookie of attempt n's evictions reads (EngineCore::confirm_votes): n | kEvictionsRead.
  static constexpr std::uint32_t kEvictionsRead = std::uint32_t{1} << 30;
  // The cookie of attempt n's takeover of its request's earlier grant (kAdoptLease): n | kAdopt.
  static constexpr std::uint32_t kAdopt = std::uint32_t{1} << 29;

  void attempt();
  void draw_tokens();          // then vote(); phase kDrawingToken while the source answers
  void vote();                 // the attempt's script on every node, carrying the tokens
  AttemptFacts facts() const;  // of the attempt out (or the last one)
  void on_reply(std::size_t node, std::uint32_t cookie, NodeReply reply) override;
  // An evictions read after the attempt's script on `node`: counts a yes that waited for it.
  void on_confirmation(std::size_t node, const NodeReply& reply);
  // Counts `node`'s vote and acts on the tally's outcome.
  void count_vote(std::size_t node, Vote vote);
  void on_quorum();
  // The attempt failed on fences, not holders: the holders alone left a quorum free.
  bool fenced_out() const;
  Error fence_error() const;  // kUnavailable, naming the name, its token and the fence
  void on_token(std::uint32_t attempt, std::size_t index, Result<std::uint64_t> token);
  void on_all_tokens();
  void attempt_failed(Error error);
  // From answers_ of a refused attempt: when a grant can first succeed (grantable_at_).
  void note_refusal();
  // A lock's refusal that ends the acquire before its answers tell when the lock frees: asks each
  // node that refused (and, if those are fewer than a quorum, each still to answer) for its key's
  // holder and ttl, and returns true (the refusal completes in on_expiry_read); false if there is
  // nothing to ask.
  bool read_refusers_expiry();
  // A lock waiter whose budget ran out asleep: its last refusal's answers may be stale; asks every
  // voting node. True if the reads went out.
  bool read_expiry_everywhere();
  // Leaves the queues and hands on its wake-ups (it will not try again), then sends the inspect
  // script to `nodes`: phase kReadingExpiry until all answered. False if there is none to ask.
  bool read_expiry(const std::vector<std::size_t>& nodes);
  // Out of every queue it joined: the next waiter becomes first — promoted to this grant's
  // expiry if `granted`, woken otherwise.
  void leave_queues(bool granted);
  void on_expiry_read(std::size_t node, const NodeReply& reply);
  void cancel() override;
  Wake wake_now(std::string_view name) override;
  void note_wakeup(std::string_view name);  // into pending_wakeups_, once
  // The first (live) waiter of one of its queues: the one that watches the nodes for it.
  bool first_in_a_queue() const;
  static void note(std::vector<std::string>& names, std::string_view name);  // once
  void retry_now();
  void join_queue();  // into the engine's waiter queue for the name, once
  void sleep_until_retry(Error error);
  void arm_retry_timer(Clock::duration delay);  // the sleep of kWaitingToRetry
  void become_first(Clock::duration frees_in) override;
  void grant(std::chrono::milliseconds validity);
  // A request's repeat (acquire_repeat.cpp). note_repeat: whether `reply` is a node's answer that
  // it holds this request's earlier grant (then kept in repeats_); repeat_on_quorum: the grant a
  // quorum answered so, if any; take_over: kAdoptLease on every node for it (phase kRepeating);
  // on_takeover: one node's answer, granting once a quorum took it over (the validity counted
  // from the takeover's start and the quorum's PTTLs) and refusing (kLocked) once none can.
  bool note_repeat(std::size_t node, const NodeReply& reply);
  // Whether `reply` is a probe's "free here" ({-4}); then answers_ says so.
  bool probe_found_free(std::size_t node, const NodeReply& reply);
  std::optional<std::string> repeat_on_quorum() const;
  void take_over(std::string head);
  void on_takeover(std::size_t node, const NodeReply& reply);
  void grant_repeat();
  void complete(Error error);
  // Bookkeeping common to every completion (observer, queues); then the handler gets `answer`.
  void finish(std::optional<ErrorCode> error);
  const std::string& name() const { return target_.names.front(); }
  const std::vector<std::string>& queues() const { return shape_->queues(); }
  Error held_error() const;  // kLocked: the shape's held_message()

  std::shared_ptr<EngineCore> core_;
  AcquireTarget target_;
  std::unique_ptr<AcquireShape> shape_;
  std::vector<std::string> fence_keys_;  // one per name
  std::string value_;  // the lease value written on the nodes (lease_secret.h); never leaves here
  std::string value_tail_;  // what follows the token in each key written (lease_value.h)
  std::vector<std::string> pending_wakeups_;   // queues whose release woke it, for the next
  std::vector<std::string> consumed_wakeups_;  // attempt; and those the attempt out consumed
  // Several queues: releases it passed on while an attempt was out or about to go.
  std::vector<std::string> released_while_out_;
  std::vector<std::uint64_t> tokens_;    // drawn for the attempt, one per name
  std::vector<std::string> token_args_;  // the same in decimal; "" without a token source
  std::size_t tokens_pending_ = 0;
  std::optional<Error> token_error_;
  std::vector<std::uint64_t> fences_;  // per name, the highest fence that refused this attempt
  std::size_t fence_refusals_ = 0;     // nodes that refused this attempt's tokens
  // Per node: the evictions reads still to come after the attempt's commands, whether one said
  // its yes may not count, and a yes waiting for them (EngineCore::confirm_votes).
  struct Confirmation {
    std::uint8_t reads_left = 1;
    bool refused = false;
    bool yes_waiting = false;
  };
  std::vector<Confirmation> confirmations_;
  // A request's repeat: per node, the earlier grant it answered ("<lease value>:<token>", or ""
  // for none); in kRepeating, the takeover's tally, the grant taken over, and each node's PTTL.
  std::vector<std::string> repeats_;
  bool probing_ = false;  // the attempt out is a probe (kAcquireLockRequestScript's ARGV[6])
  std::optional<QuorumTally> takeover_tally_;
  std::string takeover_head_;
  std::vector<std::int64_t> takeover_pttls_;
  Clock::time_point takeover_started_;
  bool fenced_attempt_ = false;  // the attempt failing now failed on fences
  FenceRetries fence_retries_;   // whether a fenced attempt draws again
  Phase phase_ = Phase::kVoting;
  bool queued_ = false;                // in the engine's waiter queue for the name
  bool marking_ = false;               // the attempt in flight marks the name as waited for
  bool woken_during_attempt_ = false;  // a release came while an attempt was in flight
  bool abandoned_ = false;  // the caller gave up; the attempt in flight decides nothing more
  std::uint32_t attempt_ = 0;
  Clock::time_point call_started_;
  Clock::time_point attempt_started_;
  Clock::time_point token_requested_;
  std::uint64_t token_floor_ = 0;  // tokens must be above it (InstanceRegistry::token_floor)
  Clock::duration token_draw_{0};
  std::optional<QuorumTally> tally_;
  std::vector<NodeAnswer> answers_;  // of the last attempt, by node: when its holder's keys expire
  // When the last refused attempt's answers say a grant can first succeed; nullopt: unknown.
  std::optional<Clock::time_point> grantable_at_;
  std::size_t expiry_reads_pending_ = 0;  // kReadingExpiry: PTTL answers still to come
  boost::asio::steady_timer retry_timer_;
  std::uint32_t sleep_ = 0;            // which arming of retry_timer_ is current
  std::optional<Error> last_refusal_;  // answered if the budget ends while it sleeps
};

}  // namespace fencelock::storage
