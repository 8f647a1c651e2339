// The Redlock engine: LockEngine over N independent Redis masters, asynchronous on Boost.Asio.
// A grant needs yes from a quorum (N/2+1 of all configured nodes, quarantined ones not counting)
// and positive validity after its fencing token arrived (lease_timing.h); a failed attempt is
// cleaned up on every node. Waiters queue per name and are woken by releases through this engine
// or, announced over Redis pub/sub, through another one on the same nodes. Lock sets, semaphore
// permits and read/write locks are the same protocol over other keys and scripts. The algorithm,
// its timing assumptions and the restarted-node quarantine: docs/architecture.md, "The Redlock
// engine".
//
// Threading: create() and every public member may be called from any thread. All work runs on a
// strand of the given executor; completion handlers run on that strand, exactly once, never inside
// the call that started the operation, and must not block. A handler may call stop() or destroy
// the engine. stop() refuses new operations (kUnavailable), ends waiting acquires at once, lets
// operations in flight finish (at most twice the node timeout) and then closes every connection;
// the io_context must keep running until then.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fencelock/storage/engine_observer.h"
#include "fencelock/storage/engine_options.h"
#include "fencelock/storage/lease.h"
#include "fencelock/storage/lock_engine.h"
#include "fencelock/storage/result.h"
#include "fencelock/storage/token_source.h"

namespace fencelock::storage {

class EngineCore;

class RedlockEngine final : public LockEngine {
 public:
  // Validates `options` and builds the engine; connections open in the background once start()
  // is called. `tokens` (may be null: leases then carry token 0) is drawn from between quorum and
  // the final validity check. `observer` (may be null) must outlive the engine.
  // Errors: kInvalidArgument (a bad option, naming it).
  static Result<std::unique_ptr<RedlockEngine>> create(
      const boost::asio::any_io_executor& executor, EngineOptions options,
      std::shared_ptr<TokenSource> tokens = nullptr, EngineObserver* observer = nullptr);
  ~RedlockEngine() override;  // stops the engine if still running
  RedlockEngine(const RedlockEngine&) = delete;
  RedlockEngine& operator=(const RedlockEngine&) = delete;

  void start();
  void stop();

  // Errors: kLocked (another lease holds it on too many nodes), kUnavailable (too few nodes
  // answered, the token source failed, or no validity was left), kInvalidArgument, kCancelled
  // (through the returned ticket). kLocked carries Error::retry_after when the last attempt's
  // answers tell it (expiry_wait.h). The scripts of waiting attempts, sets and permits answer each
  // refusing node's holder and remaining ttl; the plain SET of a single lock that will not wait
  // answers only nil, so the nodes that refused it are then asked their key's PTTL (one plain
  // command each, sent after the attempt's release, answered before the error) — those nodes'
  // keys count as one holder's.
  AcquireTicket acquire(AcquireRequest request, AcquireHandler done) override;

  // LockEngine::revoke. Errors: kUnavailable (as acquire), kInvalidArgument (also: the engine has
  // no token source); never kLocked.
  AcquireTicket revoke(AcquireRequest request, AcquireHandler done) override;

  // Makes the lease's remaining ttl at least `ttl` on every node that still holds it; never
  // shortens it, not even when the extend fails and reaches a node late. The answer's token is the
  // lease's own, as verified by the nodes. Errors: kLeaseLost (a quorum answered and too few still
  // hold the lease), kUnavailable (too few answered to tell, or no validity left),
  // kInvalidArgument (bad name, ttl or malformed proof; or a claim whose token is not the lease's
  // own — then nothing changes on any node).
  void extend(std::string name, LeaseClaim claim, std::chrono::milliseconds ttl,
              ExtendHandler done) override;

  // Deletes the lease's key wherever it still holds it. Idempotent. Errors: kUnavailable (too
  // few nodes answered to tell whether a quorum held it), kInvalidArgument (as for extend).
  void release(std::string name, LeaseClaim claim, ReleaseHandler done) override;

  // Whether some lease holds `name` on a quorum, and for how long. Errors: kUnavailable,
  // kInvalidArgument.
  void inspect(std::string name, InspectHandler done) override;
  // LockEngine::watch (engine/lock_watches.h says how). Reported to the observer as kInspect, one
  // per inspection of a watched name.
  AcquireTicket watch(std::string name, std::uint64_t after_token, std::chrono::milliseconds wait,
                      InspectHandler done) override;

  // LockEngine::list (engine/list_operation.h says how). Errors as there.
  void list(ListRequest request, ListHandler done) override;

  // Lock sets (lease.h). acquire_set: as acquire, for every name at once; names are checked
  // (1..kMaxLockSetNames valid, distinct: else kInvalidArgument) and sorted. Errors as acquire.
  // extend_set / release_set: as extend / release over the whole set; the claim carries one token
  // per name in canonical order (another count, or an altered list: kInvalidArgument). A node
  // votes yes only if it holds every key of the set; an extend changes nothing on a node that does
  // not. Reported to the observer as kAcquire / kExtend / kRelease.
  AcquireTicket acquire_set(LockSetRequest request, LockSetHandler done) override;
  void extend_set(std::vector<std::string> names, LockSetClaim claim, std::chrono::milliseconds ttl,
                  LockSetExtendHandler done) override;
  void release_set(std::vector<std::string> names, LockSetClaim claim,
                   ReleaseHandler done) override;
  // Semaphores (lease.h). acquire_permit: as acquire, for one free slot of `permits` (1..
  // kMaxPermits, else kInvalidArgument); kLocked when every slot is held; kPermitsMismatch, without
  // waiting, when the live semaphore has another count — its message is "the semaphore is live
  // with <N> permits; ..." (the first number in it is the live N). extend_permit / release_permit:
  // as extend / release on the permit's slot (slot < permits, else kInvalidArgument), keeping the
  // count alive as long as the permit (extend) or ending it with the last live slot (release).
  // inspect_semaphore: the live count (0 if no permit is live) and the slots held on a quorum;
  // errors as inspect. Reported to the observer as kAcquire / kExtend / kRelease / kInspect.
  AcquireTicket acquire_permit(PermitRequest request, PermitHandler done) override;
  void extend_permit(std::string name, std::uint32_t permits, std::uint32_t slot, LeaseClaim claim,
                     std::chrono::milliseconds ttl, ExtendHandler done) override;
  void release_permit(std::string name, std::uint32_t permits, std::uint32_t slot, LeaseClaim claim,
                      ReleaseHandler done) override;
  void inspect_semaphore(std::string name, SemaphoreStatusHandler done) override;
  // The token is raised into the name's fence on a quorum of voting nodes (token_draw_operation.h).
  // Read/write locks (lease.h, lua_rw_scripts.h). acquire_rw: as acquire; a read is granted on a
  // node while no write grant is live there and no other writer waits, a write while nothing is
  // live; a refused writer that waits keeps new readers out for as long as it waits (at most
  // max(ttl, 3 s) at a time, renewed by each attempt). extend_rw / release_rw: as extend /
  // release on the grant's own key. No request_id, no revoke, no watch; listed by list_rwlocks.
  AcquireTicket acquire_rw(RwLockRequest request, AcquireHandler done) override;
  void extend_rw(std::string name, RwMode mode, LeaseClaim claim, std::chrono::milliseconds ttl,
                 ExtendHandler done) override;
  void release_rw(std::string name, RwMode mode, LeaseClaim claim, ReleaseHandler done) override;
  void inspect_rw(std::string name, RwStatusHandler done) override;
  // LockEngine::list_semaphores / list_rwlocks (engine/list_kinds.h says how). Errors as list.
  void list_semaphores(ListRequest request, SemaphoreListHandler done) override;
  void list_rwlocks(ListRequest request, RwLockListHandler done) override;
  void draw_token(std::string name, TokenHandler done) override;

  std::size_t node_count() const noexcept override;
  std::size_t quorum() const noexcept override;
  // Nodes that are up and voting; a quorum of them is needed for any grant.
  std::size_t voting_nodes() const noexcept override;
  std::size_t unresolved_nodes() const noexcept override;
  std::vector<NodeStatus> node_statuses() const override;
  const EngineOptions& options() const noexcept override;
  // Why this engine refuses every grant right now (EngineOptions::exclusive_tokens and another
  // instance on the lock nodes, or no recent check), or nullopt. For readiness.
  std::optional<std::string> grant_refusal() const override;
  std::function<std::optional<std::string>(std::uint64_t token)> refusal_check() const override;
  std::function<std::optional<std::string>(std::uint64_t token)> current_check() const override;

 private:
  explicit RedlockEngine(std::shared_ptr<EngineCore> core);
  std::shared_ptr<EngineCore> core_;
};

}  // namespace fencelock::storage
