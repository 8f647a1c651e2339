// What sets one primitive's acquire apart — a lock, a revoke, a read/write grant, a lock set, a
// semaphore permit: the keys and script of an attempt, how a node's answer reads as a vote, what a
// failed attempt cleans up, what a refusal leads to, and how a grant is answered. AcquireOperation
// runs the protocol (tokens, quorum, validity, waiting, retry) the same way for every shape; each
// shape is one file (shape_lock.cpp, shape_revoke.cpp, shape_rw.cpp, shape_set.cpp,
// shape_permit.cpp). A shape belongs to one operation and runs on the engine's strand.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine_core.h"
#include "engine/expiry_wait.h"
#include "engine/script_operation.h"
#include "fencelock/storage/lease.h"
#include "fencelock/storage/redlock_engine.h"

namespace fencelock::storage {

// One attempt as the operation runs it: what a shape's command and cleanup are made of.
struct AttemptFacts {
  std::span<const std::string> names;   // whose tokens are drawn
  std::string_view value;               // the lease value (lease_secret.h); never leaves the engine
  std::string_view value_tail;          // lease_value.h
  std::span<const std::string> tokens;  // per name, decimal; "" without a token source
  std::span<const std::string> fence_keys;  // per name (fences.h)
  std::chrono::milliseconds ttl{0};
  std::string_view mark;     // this engine's id if a refused attempt would wait, else ""
  std::string_view request;  // AcquireTarget::request
  bool probing = false;      // the attempt only looks for the request's earlier grant
  std::chrono::steady_clock::time_point wait_ends;  // the end of the caller's wait budget
};

// A granted attempt, for the answer.
struct GrantFacts {
  std::vector<std::string> names;
  std::string owner;
  std::vector<std::uint64_t> tokens;
  std::chrono::milliseconds ttl{0};
  std::chrono::milliseconds validity{0};
  std::chrono::steady_clock::time_point started;
  std::chrono::milliseconds waited{0};
  bool repeated = false;
};

// What a refused attempt (kLocked) leaves for the shape to act on.
struct RefusalFacts {
  const Waiter* waiter = nullptr;                 // the operation, as queued
  std::span<const std::string> consumed_wakeups;  // releases that woke the refused attempt
  std::vector<std::string> released_while_out;    // releases it passed on meanwhile
};

enum class AfterRefusal : std::uint8_t {
  kAsUsual,       // sleep, or answer the refusal when the budget is spent
  kTryAgainSoon,  // once more at once if the budget allows (as if woken during the attempt)
  kTryAgainNow,   // once more at once, budget or not (a permit moving to a free slot)
};

class AcquireShape {
 public:
  virtual ~AcquireShape() = default;

  // The waiter queues it joins; whether it has several (a release it cannot use is passed on).
  virtual const std::vector<std::string>& queues() const = 0;
  virtual bool several_queues() const { return false; }
  // Whether a new acquire that may wait queues behind the waiters already there.
  virtual bool behind_waiters(const WaiterQueues& waiters) const;
  virtual void start(EngineCore& /*core*/) {}
  // Before each attempt's vote: forgets the last attempt's answers. `marking`: it would wait.
  virtual void begin_attempt(bool /*marking*/) {}
  virtual RespCommand command(const EngineCore& core, const AttemptFacts& attempt,
                              bool eval) const = 0;
  // A node's answer that is neither a fence's refusal nor a request's repeat; `answer` learns
  // what it says about the holder.
  virtual Vote read_vote(const NodeReply& reply, NodeAnswer& answer) = 0;
  // A refusal of its own (a permit count that does not match), answered at once; else kLocked.
  virtual std::optional<Error> own_refusal() const { return std::nullopt; }
  virtual std::string held_message() const = 0;
  // Deletes what a failed attempt may have written, on every node.
  virtual void clean_up(EngineCore& core, const AttemptFacts& attempt) const = 0;
  // An attempt refused by holders (kLocked): what it learned, and what comes next.
  virtual AfterRefusal refused(EngineCore& /*core*/, const RefusalFacts& /*facts*/) {
    return AfterRefusal::kAsUsual;
  }
  virtual void sleeping() {}  // the waiter sleeps until a release, its retry time or its end
  // A sleeping waiter heard a release of `queue`: true if it sleeps on (a set whose other
  // blockers are still held).
  virtual bool sleeps_on(std::string_view /*queue*/) { return false; }
  // A lock's (or a revoke's) one key, or null: a refusal reads its holder's expiry
  // (kInspectScript), a request's repeat takes it over (acquire_repeat.cpp).
  virtual const std::string* lock_key() const { return nullptr; }
  // A shared grant (a read): the waiter behind it may be let in too.
  virtual bool shared_grant() const { return false; }
  virtual void grant(EngineCore& core, const AttemptFacts& attempt, GrantFacts grant) = 0;
  virtual void fail(EngineCore& core, Error error) = 0;
  // Granted or not, the operation is done (a writer gives back its writer-waiting key).
  virtual void finished(EngineCore& /*core*/, const AttemptFacts& /*attempt*/) {}
};

// A shape answering with a Result<Granted>: the handler is called once, later on the strand.
template <class Granted>
class AnsweringShape : public AcquireShape {
 public:
  void fail(EngineCore& core, Error error) override {
    core.complete_later(std::move(done_), Result<Granted>(std::move(error)));
  }

 protected:
  explicit AnsweringShape(std::function<void(Result<Granted>)> done) : done_(std::move(done)) {}
  void answer(EngineCore& core, Granted granted) {
    core.complete_later(std::move(done_), Result<Granted>(std::move(granted)));
  }

 private:
  std::function<void(Result<Granted>)> done_;
};

// The Lease a lock's (or a revoke's) grant answers.
Lease lock_lease(const AttemptFacts& attempt, GrantFacts grant);

// A grant's times, the same in every answer (Lease, LockSetLease, Permit).
template <class Granted>
void set_times(Granted& granted, const GrantFacts& grant) {
  granted.ttl = grant.ttl;
  granted.validity = grant.validity;
  granted.started = grant.started;
  granted.waited = grant.waited;
}

// An attempt's keys: `own`, then the fence keys. And the arguments a one-key script's attempt
// starts with: the value it writes (with the first token), the ttl, the mark.
std::vector<std::string> attempt_keys(std::span<const std::string> own,
                                      const AttemptFacts& attempt);
std::vector<std::string> attempt_args(const AttemptFacts& attempt);

// The acquire scripts' common answer: 1, or {0, holder, pttl} when refused by a holder.
Vote read_acquire_reply(const NodeReply& reply, NodeAnswer& answer);

// Whether `name` is in `names`.
bool contains(std::span<const std::string> names, std::string_view name);

std::unique_ptr<AcquireShape> lock_shape(const EngineCore& core, const std::string& name,
                                         RedlockEngine::AcquireHandler done);
std::unique_ptr<AcquireShape> revoke_shape(const EngineCore& core, const std::string& name,
                                           std::string_view lease_id,
                                           RedlockEngine::AcquireHandler done);
std::unique_ptr<AcquireShape> rw_shape(const EngineCore& core, const std::string& name, RwMode mode,
                                       std::string_view lease_id,
                                       RedlockEngine::AcquireHandler done);
std::unique_ptr<AcquireShape> set_shape(const EngineCore& core, std::vector<std::string> names,
                                        RedlockEngine::LockSetHandler done);
std::unique_ptr<AcquireShape> permit_shape(const EngineCore& core, const std::string& name,
                                           std::uint32_t permits,
                                           RedlockEngine::PermitHandler done);

// What an extend or release of each shape's grant runs (`script`) on which keys, with the claim.
// A lock's; a lock set's (names in canonical order); a permit's (its slot key, then the config
// key); a read/write grant's (its lease key, named by the claim's lease id, and the state key,
// whose name is the queue a release wakes).
ClaimTarget lock_claim(const EngineCore& core, Script script, std::string_view name,
                       const LeaseClaim& claim);
ClaimTarget set_claim(const EngineCore& core, Script script, std::vector<std::string> names,
                      const LockSetClaim& claim);
ClaimTarget permit_claim(const EngineCore& core, Script script, const std::string& name,
                         std::uint32_t permits, std::uint32_t slot, const LeaseClaim& claim);
ClaimTarget rw_claim(const EngineCore& core, Script script, const std::string& name, RwMode mode,
                     const LeaseClaim& claim);

// Key names of the shapes (names, not keys: EngineCore::key_of() adds the prefix). A semaphore's
// slot "<name>#permit:<slot>" and config "<name>#permits" (lua_scripts.h); a read/write lock's
// state "<name>#rw" (also its waiters' queue), a grant's lease key "<name>#rw:<lease id>" and the
// writer-waiting key "<name>#rw-writer" (lua_rw_scripts.h); a revoke attempt's saved key
// "<name>#revoked:<revoker's lease id>:<the attempt's token>" (lua_revoke_scripts.h).
std::string permit_slot_name(std::string_view semaphore, std::uint32_t slot);
std::string permit_config_name(std::string_view semaphore);
std::string rw_state_name(std::string_view name);
std::string rw_lease_name(std::string_view name, std::string_view lease_id);
std::string rw_writer_name(std::string_view name);
std::string revoke_saved_name(std::string_view name, std::string_view lease_id,
                              std::string_view token);

}  // namespace fencelock::storage
