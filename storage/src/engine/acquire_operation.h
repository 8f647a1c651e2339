// One acquire call — of a single lock, a lock set, a semaphore permit or a read/write grant
// (AcquireTarget) — run as attempts (tokens → one script on every node → quorum → validity) until
// granted, refused with no wait budget left, cancelled, or the engine stops. The why of each rule
// is in docs/architecture.md, "Algorithm" and "The fence".
// - A grant's token is above every token granted before it started: an attempt refused by fences
//   (not by a holder) tries again at once above them, at most kFenceRetries times in a row, then
//   answers kUnavailable (the token store is behind the lock nodes).
// - Every failed attempt is cleaned up on every node, queued behind its own script on each
//   connection; a revoke's cleanup puts back what it overwrote (lua_revoke_scripts.h).
// - Answers to an earlier attempt (its number is the reply cookie) are ignored.
// - An attempt that will wait marks the holder's value with this engine's id, so that releases
//   through other engines are announced to it.
// - A refusal (kLocked) carries retry_after, from the refusing nodes' own answers (expiry_wait.h).
// The targets differ only in the keys and script of an attempt, the names whose tokens are drawn
// and whose waiter queues it joins, and how a refusal is read (a permit moves at once to a slot
// that a quorum of the answers shows free).
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/engine_core.h"
#include "engine/expiry_wait.h"
#include "engine/fences.h"
#include "fencelock/storage/lease.h"
#include "fencelock/storage/redlock_engine.h"

namespace fencelock::storage {

// What one acquire call tries to take.
struct AcquireTarget {
  enum class Kind : std::uint8_t { kLock, kSet, kPermit };
  Kind kind = Kind::kLock;
  // The names whose tokens are drawn: the lock's name, the set's names in canonical order, or the
  // semaphore's name.
  std::vector<std::string> names;
  std::uint32_t permits = 0;  // kPermit: the semaphore's count
  std::chrono::milliseconds ttl{0};
  std::chrono::milliseconds wait{0};
  std::string owner;
  std::string holder;   // AcquireRequest::holder, checked
  bool revoke = false;  // kLock: taken whatever holds it (LockEngine::revoke); never waits
  // kLock: request_digest() of AcquireRequest::request_id, or "" for none. With one, an attempt
  // that finds this request's earlier grant on a quorum takes it over and answers it again.
  std::string request;
  // kLock: a grant of the read/write lock of the name in this mode (lua_rw_scripts.h), not of the
  // lock itself.
  std::optional<RwMode> rw{};
};

// The slot key name of a semaphore's slot (lua_scripts.h): "<name>#permit:<slot>"; and its config
// key's name, "<name>#permits". Names, not keys: EngineCore::key_of() adds the prefix.
std::string permit_slot_name(std::string_view semaphore, std::uint32_t slot);
std::string permit_config_name(std::string_view semaphore);

// A read/write lock's key names (lua_rw_scripts.h): its state key "<name>#rw" (also the name of
// the queue its waiters join), a grant's lease key "<name>#rw:<lease id>", and its writer-waiting
// key "<name>#rw-writer". Names, not keys, as above.
std::string rw_state_name(std::string_view name);
std::string rw_lease_name(std::string_view name, std::string_view lease_id);
std::string rw_writer_name(std::string_view name);

// The name of a revoke attempt's saved key (lua_revoke_scripts.h):
// "<name>#revoked:<revoker's lease id>:<the attempt's token>".
std::string revoke_saved_name(std::string_view name, std::string_view lease_id,
                              std::string_view token);

// What a kLocked answer says when the target is held: "the lock is held by another lease", ...
std::string lock_held_message(const AcquireTarget& target);

class AcquireOperation : public ReplySink,
                         public Cancellable,
                         public Waiter,
                         public detail::CancellableAcquire,
                         public std::enable_shared_from_this<AcquireOperation> {
 public:
  // How the grant is answered: a Lease, a LockSetLease or a Permit, after the target's kind.
  using Handler = std::variant<RedlockEngine::AcquireHandler, RedlockEngine::LockSetHandler,
                               RedlockEngine::PermitHandler>;

  AcquireOperation(std::shared_ptr<EngineCore> core, AcquireTarget target, std::string value,
                   Handler done);

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
  void draw_tokens();  // then vote(); phase kDrawingToken while the source answers
  void vote();         // the attempt's script on every node, carrying the tokens
  std::string token_arg(std::size_t index) const;  // "" without a token source: no fence
  RespCommand attempt_command(bool eval) const;
  void on_reply(std::size_t node, std::uint32_t cookie, NodeReply reply) override;
  // An evictions read after the attempt's script on `node`: counts a yes that waited for it.
  void on_confirmation(std::size_t node, const NodeReply& reply);
  // Counts `node`'s vote and acts on the tally's outcome.
  void count_vote(std::size_t node, Vote vote);
  // Reads one node's answer to a permit attempt into answers_, free_votes_ and mismatch_.
  Vote permit_vote(std::size_t node, const NodeReply& reply);
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
  // A refused permit attempt: a slot free on a quorum of the answers to try at once, if any; and
  // the slot to try after a sleep otherwise.
  std::optional<std::uint32_t> free_slot_to_try();
  void cancel() override;
  Wake wake_now(std::string_view name) override;
  // Reads one node's answer to a lock set's attempt into answers_ and name_free_votes_.
  Vote set_vote(std::size_t node, const NodeReply& reply);
  // A lock set's attempt was refused: notes its blockers_, and each name whose release woke it that
  // its answers found free on a quorum goes on to the next waiter of that name (which may need
  // nothing else), instead of waiting behind this one.
  void hand_on_wakeups();
  void note_wakeup(std::string_view name);  // into pending_wakeups_, once
  // The first (live) waiter of one of its queues: the one that watches the nodes for it.
  bool first_in_a_queue() const;
  static void note(std::vector<std::string>& names, std::string_view name);  // once
  // A refused attempt of a waiter of several queues: releases it passed on while the attempt was
  // out make it try once more at once (a set: once no blocker is left).
  void use_releases_while_out();
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
  // Sets keys_ for an attempt on slot_ (permits) — once for the other kinds.
  void set_keys();
  const std::string& name() const { return target_.names.front(); }
  // The waiter queues it joins: the names, the semaphore's slots, or the read/write lock's.
  const std::vector<std::string>& queues() const {
    if (target_.kind == AcquireTarget::Kind::kPermit) return slot_names_;
    return target_.rw ? rw_queue_ : target_.names;
  }
  // A read grant shares the lock: the waiter behind it may be let in too.
  bool shared_grant() const { return target_.rw == RwMode::kRead; }
  // A writer that would wait keeps new readers out this long from this attempt (ms), or "0".
  std::string writer_waiting_arg() const;
  // A revoke's saved key; the cleanup of a failed revoke (kUndoRevoke); the settling of a granted
  // one (kSettleRevoke): acquire_revoke.cpp.
  std::string revoke_saved_key() const;
  void undo_revoke();
  void settle_revoke();

  std::shared_ptr<EngineCore> core_;
  AcquireTarget target_;
  std::vector<std::string> keys_;  // of the attempt (a permit: config key, then every slot key)
  std::vector<std::string> fence_keys_;  // one per name
  std::vector<std::string> slot_names_;  // kPermit: the names of the semaphore's slots
  std::vector<std::string> rw_queue_;    // rw: the read/write lock's queue (rw_state_name)
  // rw write: an attempt may have taken the writer-waiting key, which finish() gives back.
  bool took_writer_key_ = false;
  std::string value_;  // the lease value written on the nodes (lease_secret.h); never leaves here
  std::string value_tail_;  // what follows the token in each key written (lease_value.h)
  Handler done_;
  std::uint32_t slot_ = 0;                 // kPermit: the slot of the attempt
  std::uint32_t hops_ = 0;                 // kPermit: attempts moved to a free slot without a sleep
  std::optional<std::string> mismatch_;    // kPermit: a node's live count of another semaphore
  std::vector<std::uint32_t> free_votes_;  // kPermit: per slot, the answers that found it free
  std::vector<std::uint32_t> soonest_votes_;    // kPermit: per slot, answers it frees first on
  std::vector<std::uint32_t> name_free_votes_;  // kSet: per name, the answers that found it free
  // kSet: the names its last refusal found held on so many nodes that no quorum was free — it
  // sleeps until a release of each (or the expiry sleep); empty: not known, any release wakes it.
  std::vector<std::string> blockers_;
  std::vector<std::string> pending_wakeups_;   // queues whose release woke it, for the next
  std::vector<std::string> consumed_wakeups_;  // attempt; and those the attempt out consumed
  // Several queues: releases it passed on while an attempt was out or about to go.
  std::vector<std::string> released_while_out_;
  std::vector<std::uint64_t> tokens_;  // drawn for the attempt, one per name
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
