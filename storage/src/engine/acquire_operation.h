// One acquire call: attempts (SET NX PX on every node → quorum → token → validity check) until
// granted, refused with no wait budget left, or the engine stops.
//
// An attempt is identified by its number, carried as the reply cookie, so answers that straggle
// in from an earlier attempt are ignored. Every failed attempt releases the key on every node;
// on a node's connection the release is queued behind that attempt's SET, so it cannot overtake it.
// An attempt that will wait if refused runs the acquire-and-mark script instead of the plain SET,
// so that its refusal marks the holder's value (lua_scripts.h) and releases through other engines
// are announced to this one.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <optional>

#include "engine/engine_core.h"
#include "engine/expiry_wait.h"
#include "fencelock/storage/lease.h"
#include "fencelock/storage/redlock_engine.h"

namespace fencelock::storage {

class AcquireOperation : public ReplySink,
                         public Cancellable,
                         public Waiter,
                         public detail::CancellableAcquire,
                         public std::enable_shared_from_this<AcquireOperation> {
 public:
  AcquireOperation(std::shared_ptr<EngineCore> core, AcquireRequest request, std::string value,
                   RedlockEngine::AcquireHandler done);

  void start();  // on the strand
  // AcquireTicket::cancel: abandon() on the strand.
  void cancel_from_any_thread() override;
  // The caller gave up: complete with kCancelled, releasing a grant that an attempt in flight may
  // still win. On the strand.
  void abandon();

 private:
  using Clock = std::chrono::steady_clock;
  enum class Phase { kVoting, kDrawingToken, kWaitingToRetry, kWoken, kDone };

  void attempt();
  RespCommand attempt_command(bool marking, bool eval) const;
  void on_reply(std::size_t node, std::uint32_t cookie, NodeReply reply) override;
  void on_quorum();
  void on_token(std::uint32_t attempt, Result<std::uint64_t> token);
  void attempt_failed(Error error);
  void cancel() override;
  bool wake_now() override;
  void retry_now();
  void join_queue();  // into the engine's waiter queue for the name, once
  void sleep_until_retry(Error error);
  void complete(Result<Lease> result);

  std::shared_ptr<EngineCore> core_;
  AcquireRequest request_;
  std::string key_;
  std::string value_;  // the lease value written on the nodes (lease_secret.h); never leaves here
  RedlockEngine::AcquireHandler done_;
  Phase phase_ = Phase::kVoting;
  bool queued_ = false;                // in the engine's waiter queue for the name
  bool marking_ = false;               // the attempt in flight marks the name as waited for
  bool woken_during_attempt_ = false;  // a release came while an attempt was in flight
  bool abandoned_ = false;  // the caller gave up; the attempt in flight decides nothing more
  std::uint32_t attempt_ = 0;
  Clock::time_point call_started_;
  Clock::time_point attempt_started_;
  Clock::time_point token_requested_;
  std::uint64_t token_floor_ = 0;  // the token must be above it (InstanceRegistry::token_floor)
  Clock::duration token_draw_{0};
  std::optional<QuorumTally> tally_;
  std::vector<NodeAnswer> answers_;  // of the last attempt, by node: when its holder's keys expire
  boost::asio::steady_timer retry_timer_;
};

}  // namespace fencelock::storage
