// Base of the operations that run one Lua script on every node (extend, release, inspect):
// broadcasts EVALSHA, retries a node once with EVAL when it answers NOSCRIPT, hands every other
// answer to the subclass, and reports the outcome to the observer.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/engine_core.h"
#include "fencelock/storage/lease.h"
#include "fencelock/storage/lease_secret.h"

namespace fencelock::storage {

class ScriptOperation : public ReplySink, public std::enable_shared_from_this<ScriptOperation> {
 public:
  void start();  // on the strand

 protected:
  ScriptOperation(const std::shared_ptr<EngineCore>& core, OperationKind kind, Script script,
                  std::vector<std::string> keys, std::vector<std::string> args);

  // One node's answer (never NOSCRIPT). Record it in tally_ and call decide().
  virtual void on_answer(std::size_t node, const NodeReply& reply) = 0;
  // Looks at tally_ and, if the outcome is known, completes. Also called once right after the
  // broadcast (a cluster with too few voting nodes is decided before any answer).
  virtual void decide() = 0;
  // A node answered after the outcome was decided (its command still ran there).
  virtual void on_late_answer() {}

  bool finished() const noexcept { return finished_; }
  // Marks the operation complete and tells the observer. Call exactly once, before the handler.
  void finish(std::optional<ErrorCode> error);

  std::shared_ptr<EngineCore> core_;
  QuorumTally tally_;
  std::chrono::steady_clock::time_point started_;

 private:
  void on_reply(std::size_t node, std::uint32_t cookie, NodeReply reply) override;
  RespCommand command(bool eval) const;

  OperationKind kind_;
  Script script_;
  std::vector<std::string> keys_;
  std::vector<std::string> args_;
  bool finished_ = false;
};

// What a release or extend works on: the script, its keys, the claim argument and, for a release,
// the names whose first waiter it wakes. A single lock: kRelease/kExtend on its key; a lock set:
// kReleaseSet/kExtendSet on every key of the set; a permit: kReleasePermit/kExtendPermit on its
// slot key and the semaphore's config key (lua_scripts.h).
struct ClaimTarget {
  Script script = Script::kRelease;
  std::vector<std::string> keys;
  std::vector<std::string> names;  // release: waiter queues to wake once it is free
  // The script argument that carries a claim: proof, then the token text the proof was made from
  // ("<token>", "<t1>,<t2>,..." — then "@<owner>" if any; lease_secret.h).
  std::string claim;
  bool owned = false;  // the claim names an owner: a mismatch may be another API key's lease
};

// Base of release and extend: scripts that check the holder's claim (lua_scripts.h) and answer 1
// (done), 0 (not this lease, or gone) or -1 (this lease, but not its token: refused at once with
// kInvalidArgument, nothing changed anywhere); the subclass decides from the tally.
template <class T>
class ClaimOperation : public ScriptOperation {
 protected:
  // `args` start with the claim argument.
  ClaimOperation(const std::shared_ptr<EngineCore>& core, OperationKind kind, Script script,
                 std::vector<std::string> keys, bool owned, std::vector<std::string> args,
                 std::function<void(Result<T>)> done)
      : ScriptOperation(core, kind, script, std::move(keys), std::move(args)),
        owned_(owned),
        done_(std::move(done)) {}

  // Finishes (the observer learns the error code, if any) and answers the handler. A release that
  // found the lease gone (false) is reported as kLeaseLost: its caller held it past its expiry.
  void complete(Result<T> result) {
    std::optional<ErrorCode> reported;
    if (!result.ok()) reported = result.error().code;
    if constexpr (std::is_same_v<T, bool>) {
      if (result.ok() && !result.value()) reported = ErrorCode::kLeaseLost;
    }
    finish(reported);
    core_->complete_later(std::move(done_), std::move(result));
  }

 private:
  void on_answer(std::size_t node, const NodeReply& reply) final {
    if (reply.is_integer(-1)) {
      return complete(make_error(
          ErrorCode::kInvalidArgument,
          !owned_ ? "the lease was altered: its token (or mode) is not what it was granted with"
                  : "the lease was not granted to this API key, or its token (or mode) was "
                    "altered"));
    }
    const bool answered = reply.is_integer();
    tally_.record(node, !answered ? Vote::kFailed : reply.integer == 1 ? Vote::kYes : Vote::kNo);
    decide();
  }

  bool owned_;  // the claim names an owner: a mismatch may be another API key's lease
  std::function<void(Result<T>)> done_;
};

// The release tag of a release of `names`: engine id + release number when this engine has waiters
// for one of them, "" otherwise (the script then skips announcing a release that only our own
// waiters wait for: they are woken directly).
std::string release_tag_for(EngineCore& core, const std::vector<std::string>& names);

// Compare-and-delete on every node (announced to other engines' waiters, see EngineCore).
// `release_tag`: release_tag_for(target.names).
class ReleaseOperation final : public ClaimOperation<bool> {
 public:
  ReleaseOperation(const std::shared_ptr<EngineCore>& core, ClaimTarget target,
                   std::string release_tag, std::function<void(Result<bool>)> done);

 private:
  void decide() override;
  // A straggler's delete is not announced to this engine (its own tag): its watches look again.
  void on_late_answer() override;
  std::vector<std::string> names_;  // to wake each name's first waiter once the lock is free
  std::string release_tag_;         // engine id + release number, as announced
};

// Compare-and-lengthen on every node. `extra` follows the claim and the ttl in the script's
// arguments (a permit's count).
class ExtendOperation final : public ClaimOperation<Extension> {
 public:
  ExtendOperation(const std::shared_ptr<EngineCore>& core, ClaimTarget target, std::uint64_t token,
                  std::chrono::milliseconds ttl, std::function<void(Result<Extension>)> done,
                  const std::string& extra = {});

 private:
  void decide() override;
  std::uint64_t token_;
  std::chrono::milliseconds ttl_;
};

// What inspect learned about one key, and the voting nodes (in the configured order) that hold
// its quorum value (a listing names a key when it scans the first of them it may list from).
struct InspectedKey {
  LockStatus status;
  std::vector<std::size_t> holders;  // when status.held
  // Not held among the nodes that answered, but one value is on enough of them that the nodes
  // which did not (down, quarantined, silent) could make it a quorum: whether it is held is not
  // known.
  bool maybe_held = false;
};

// `key`'s status, or kUnavailable when it is maybe_held: "free" would be a guess the nodes that
// did not answer could prove wrong. `name` is for the message.
Result<LockStatus> known_status(InspectedKey key, const std::string& name);
// That kUnavailable: whether `name` is held cannot be told from the nodes that answered.
Error maybe_held_error(const std::string& name);

// What inspect learned about each key, in order, and which nodes answered.
struct Inspection {
  std::vector<InspectedKey> keys;
  std::vector<bool> answered;  // by node
};

// {value, pttl} of each of `keys` from every node; waits for every voting node (bounded by the
// node timeout). `mark`: an engine id whose mark each held value gets (kInspectScript), or "".
class InspectOperation final : public ScriptOperation {
 public:
  InspectOperation(const std::shared_ptr<EngineCore>& core, const std::vector<std::string>& keys,
                   std::function<void(Result<Inspection>)> done, const std::string& mark = {});

 private:
  struct Holding {
    std::optional<std::string> value;  // nullopt: no key on that node
    std::int64_t pttl_ms = -2;
  };
  void on_answer(std::size_t node, const NodeReply& reply) override;
  void decide() override;
  InspectedKey decide_key(std::size_t key) const;
  std::size_t key_count_;
  std::vector<std::vector<Holding>> holdings_;  // by node, then by key
  std::function<void(Result<Inspection>)> done_;
};

// What a semaphore's inspection learned: its status, and for listings which nodes hold each slot
// held on a quorum (bit i: node i), which nodes answered, and whether some slot not held on a
// quorum of the nodes that answered could be with those that did not (as
// InspectedKey::maybe_held; whatever the other slots hold).
struct SemaphoreInspection {
  SemaphoreStatus status;
  std::vector<std::uint32_t> held_on;
  std::uint32_t answered = 0;
  bool maybe_held = false;
};

// A semaphore's count and live slots on every node (kInspectSemaphoreScript); waits for every
// voting node, as InspectOperation. A slot counts as held when one holder holds it on a quorum.
class InspectSemaphoreOperation final : public ScriptOperation {
 public:
  InspectSemaphoreOperation(const std::shared_ptr<EngineCore>& core, std::string config_key,
                            std::function<void(Result<SemaphoreInspection>)> done);

 private:
  struct Seen {
    std::string permits;             // "" if no config key there
    std::vector<std::string> slots;  // "<slot>:<holder id>"
  };
  void on_answer(std::size_t node, const NodeReply& reply) override;
  void decide() override;
  std::vector<Seen> seen_;
  std::function<void(Result<SemaphoreInspection>)> done_;
};

}  // namespace fencelock::storage
