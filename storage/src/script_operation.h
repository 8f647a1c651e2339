// Base of the operations that run one Lua script on every node (extend, release, inspect):
// broadcasts EVALSHA, retries a node once with EVAL when it answers NOSCRIPT, hands every other
// answer to the subclass, and reports the outcome to the observer.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine_core.h"
#include "fencelock/storage/lease.h"

namespace fencelock::storage {

class ScriptOperation : public ReplySink, public std::enable_shared_from_this<ScriptOperation> {
 public:
  void start();  // on the strand

 protected:
  ScriptOperation(std::shared_ptr<EngineCore> core, OperationKind kind, Script script,
                  std::vector<std::string> keys, std::vector<std::string> args);

  // One node's answer (never NOSCRIPT). Record it in tally_ and call decide().
  virtual void on_answer(std::size_t node, const NodeReply& reply) = 0;
  // Looks at tally_ and, if the outcome is known, completes. Also called once right after the
  // broadcast (a cluster with too few voting nodes is decided before any answer).
  virtual void decide() = 0;

  bool finished() const noexcept { return finished_; }
  // Marks the operation complete and tells the observer. Call exactly once, before the handler.
  void finish(std::optional<ErrorCode> error);

  // A release's or extend's claim names this lease with a token that is not its own (the script
  // answered -1, lua_scripts.h): the lease string was altered. No node changed anything.
  static bool claim_refused(const NodeReply& reply) noexcept {
    return reply.kind == NodeReply::Kind::kInteger && reply.integer == -1;
  }
  template <class T>
  void refuse_claim(std::function<void(Result<T>)>& done) {
    finish(ErrorCode::kInvalidArgument);
    core_->complete_later(std::move(done), Result<T>(make_error(ErrorCode::kInvalidArgument,
                                                                "the lease's token is not the token it was granted with")));
  }
  // The script argument that carries a claim: proof, then the token in decimal.
  static std::string claim_argument(const LeaseClaim& claim);

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

// Compare-and-delete on every node (announced to other engines' waiters, see EngineCore).
class ReleaseOperation final : public ScriptOperation {
 public:
  ReleaseOperation(std::shared_ptr<EngineCore> core, std::string_view name, const LeaseClaim& claim,
                   std::function<void(Result<bool>)> done);

 private:
  ReleaseOperation(std::shared_ptr<EngineCore> core, std::string_view name, const LeaseClaim& claim,
                   std::string release_tag, std::function<void(Result<bool>)> done);
  void on_answer(std::size_t node, const NodeReply& reply) override;
  void decide() override;
  std::string name_;        // to wake the name's first waiter once the lock is free
  std::string release_tag_;  // engine id + release number, as announced
  std::function<void(Result<bool>)> done_;
};

// Compare-and-PEXPIRE on every node.
class ExtendOperation final : public ScriptOperation {
 public:
  ExtendOperation(std::shared_ptr<EngineCore> core, std::string_view name, const LeaseClaim& claim,
                  std::chrono::milliseconds ttl, std::function<void(Result<Extension>)> done);

 private:
  void on_answer(std::size_t node, const NodeReply& reply) override;
  void decide() override;
  std::uint64_t token_;
  std::chrono::milliseconds ttl_;
  std::function<void(Result<Extension>)> done_;
};

// {value, pttl} from every node; waits for every voting node (bounded by the node timeout).
class InspectOperation final : public ScriptOperation {
 public:
  InspectOperation(std::shared_ptr<EngineCore> core, std::string_view name,
                   std::function<void(Result<LockStatus>)> done);

 private:
  struct Holding {
    std::optional<std::string> value;  // nullopt: no key on that node
    std::int64_t pttl_ms = -2;
  };
  void on_answer(std::size_t node, const NodeReply& reply) override;
  void decide() override;
  std::vector<Holding> holdings_;
  std::function<void(Result<LockStatus>)> done_;
};

}  // namespace fencelock::storage
