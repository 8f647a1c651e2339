// What the HTTP service needs from a lock engine: the four lock operations and the state that
// readiness reports. RedlockEngine implements it over Redis (redlock_engine.h, which documents the
// behaviour and errors of each call); the service's unit tests implement it in memory.
//
// Contract for every implementation: each handler runs exactly once, never inside the call that
// started the operation, and on a thread where it must not block; calls are safe from any thread.
// A lease's proof and secret are never logged.
// Errors of every call: kInvalidArgument (bad name, ttl, wait or claim), kUnavailable; acquire also
// kLocked and kCancelled; extend kLeaseLost; acquire_permit kPermitsMismatch. A kLocked of
// acquire, acquire_set or acquire_permit carries Error::retry_after when the refusing attempt's
// answers tell when a grant can succeed again (result.h); no further call to the nodes is needed
// to learn it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fencelock/storage/engine_options.h"
#include "fencelock/storage/lease.h"
#include "fencelock/storage/result.h"

namespace fencelock::storage {

namespace detail {
// What a ticket cancels: implemented by an engine's acquire operation.
class CancellableAcquire {
 public:
  virtual void cancel_from_any_thread() = 0;

 protected:
  ~CancellableAcquire() = default;
};
}  // namespace detail

// Cancels the acquire it was returned for: the caller no longer wants the lock (its client went
// away). An acquire waiting between attempts completes with kCancelled at once; an attempt in
// flight completes with kCancelled when it resolves, and a grant it won is released on every node
// instead of being handed out. A no-op once the acquire completed, and for an empty ticket.
// Copyable; cancel() is safe from any thread, any number of times.
class AcquireTicket {
 public:
  AcquireTicket() = default;
  explicit AcquireTicket(std::weak_ptr<detail::CancellableAcquire> target)
      : target_(std::move(target)) {}
  void cancel() const {
    if (const auto target = target_.lock()) target->cancel_from_any_thread();
  }

 private:
  std::weak_ptr<detail::CancellableAcquire> target_;  // no allocation per acquire
};

// One lock node as seen from outside the engine's strand (metrics, /readyz): a snapshot, which
// may be stale at once.
struct NodeStatus {
  std::string address;
  bool up = false;           // connected and handshake done
  bool quarantined = false;  // up but not voting (restarted recently, or fences being repaired)
  std::uint64_t commands = 0, errors = 0, timeouts = 0, disconnects = 0;
  std::uint64_t resolve_failures = 0, address_changes = 0;
  bool unresolved = false;  // its name did not resolve at the last attempt
  std::string refused{};    // why its last handshake or recheck refused it; "" once one passes
  // Quarantined: how long until it votes again, as known now; nullopt while its fences are being
  // copied back, or while it runs settings under which it may evict keys (then `refused` says).
  std::optional<std::chrono::milliseconds> votes_again_in{};
  // Quarantined only until it is judged: it looks new (no record of any grant) and waits for an
  // admission another instance may be writing; votes_again_in is when it is judged at the latest.
  bool unjudged = false;
};

class LockEngine {
 public:
  using AcquireHandler = std::function<void(Result<Lease>)>;
  using ExtendHandler = std::function<void(Result<Extension>)>;
  // true iff a quorum of voting nodes still held the lease and deleted it.
  using ReleaseHandler = std::function<void(Result<bool>)>;
  using InspectHandler = std::function<void(Result<LockStatus>)>;

  virtual ~LockEngine() = default;

  virtual AcquireTicket acquire(AcquireRequest request, AcquireHandler done) = 0;
  // Takes `request.name` whatever lease holds it (its wait is ignored: never waits), with a token
  // above every token granted for the name before: the revoked lease's extend and release then
  // find it gone, and a fenced store refuses its writes once the revoker (or anyone after) wrote.
  // Until then both may believe they hold it: only fencing makes a revoke safe. A revoke that
  // fails may still have ended the old lease on some nodes.
  virtual AcquireTicket revoke(AcquireRequest request, AcquireHandler done) = 0;
  virtual void extend(std::string name, LeaseClaim claim, std::chrono::milliseconds ttl,
                      ExtendHandler done) = 0;
  virtual void release(std::string name, LeaseClaim claim, ReleaseHandler done) = 0;
  virtual void inspect(std::string name, InspectHandler done) = 0;
  // Answers `name`'s status (as inspect) once it is no longer "held with token `after_token`" —
  // released, expired, revoked or taken again — or after `wait` with the status unchanged (its
  // remaining time as of then). Woken by release announcements and the lease's expiry, not by
  // polling: however many watch a name, while nothing changes they cost one inspection of the
  // nodes per lease period. A lock granted without a token never matches (answered at once). The
  // ticket cancels it (kCancelled). Errors as inspect, and kInvalidArgument for a wait outside
  // 0..max_wait; kUnavailable when too many watches wait already or the engine stops.
  virtual AcquireTicket watch(std::string name, std::uint64_t after_token,
                              std::chrono::milliseconds wait, InspectHandler done) = 0;
  // One page of the locks held on a quorum whose names start with request.prefix (lease.h): each
  // such name at least once over a whole listing if it stays held throughout, never a name that
  // was free throughout; semaphores and read/write locks are listed apart (below). Bounded work per
  // page. Errors: kInvalidArgument (prefix, limit, a cursor no listing gave), kUnavailable.
  using ListHandler = std::function<void(Result<LockPage>)>;
  virtual void list(ListRequest request, ListHandler done) = 0;

  // Lock sets (lease.h): one lease over several names, all or nothing. `names` in any order (they
  // are sorted; claims carry tokens in that sorted order). Errors as acquire/extend/release.
  using LockSetHandler = std::function<void(Result<LockSetLease>)>;
  using LockSetExtendHandler = std::function<void(Result<LockSetExtension>)>;
  virtual AcquireTicket acquire_set(LockSetRequest request, LockSetHandler done) = 0;
  virtual void extend_set(std::vector<std::string> names, LockSetClaim claim,
                          std::chrono::milliseconds ttl, LockSetExtendHandler done) = 0;
  virtual void release_set(std::vector<std::string> names, LockSetClaim claim,
                           ReleaseHandler done) = 0;

  // Counting semaphores (lease.h): a permit is a lease on one of the semaphore's slots. Errors as
  // acquire/extend/release, and kPermitsMismatch (acquire_permit).
  using PermitHandler = std::function<void(Result<Permit>)>;
  using SemaphoreStatusHandler = std::function<void(Result<SemaphoreStatus>)>;
  virtual AcquireTicket acquire_permit(PermitRequest request, PermitHandler done) = 0;
  virtual void extend_permit(std::string name, std::uint32_t permits, std::uint32_t slot,
                             LeaseClaim claim, std::chrono::milliseconds ttl,
                             ExtendHandler done) = 0;
  virtual void release_permit(std::string name, std::uint32_t permits, std::uint32_t slot,
                              LeaseClaim claim, ReleaseHandler done) = 0;
  virtual void inspect_semaphore(std::string name, SemaphoreStatusHandler done) = 0;

  // Read/write locks (lease.h): acquire_rw answers a Lease (its proof bound to the mode);
  // extend_rw / release_rw take the mode it was granted with. inspect_rw: the grants held on a
  // quorum. Errors as acquire/extend/release/inspect.
  using RwStatusHandler = std::function<void(Result<RwLockStatus>)>;
  virtual AcquireTicket acquire_rw(RwLockRequest request, AcquireHandler done) = 0;
  virtual void extend_rw(std::string name, RwMode mode, LeaseClaim claim,
                         std::chrono::milliseconds ttl, ExtendHandler done) = 0;
  virtual void release_rw(std::string name, RwMode mode, LeaseClaim claim, ReleaseHandler done) = 0;
  virtual void inspect_rw(std::string name, RwStatusHandler done) = 0;
  // Listings of the semaphores and read/write locks with a grant held on a quorum (lease.h): the
  // same request, pages, cursors, guarantees and errors as list (a name on which one permit or
  // grant stays held throughout a listing is listed at least once), each name answered as
  // inspect_semaphore / inspect_rw answer it; a name with nothing held is left out.
  using SemaphoreListHandler = std::function<void(Result<SemaphorePage>)>;
  using RwLockListHandler = std::function<void(Result<RwLockPage>)>;
  virtual void list_semaphores(ListRequest request, SemaphoreListHandler done) = 0;
  virtual void list_rwlocks(ListRequest request, RwLockListHandler done) = 0;
  // A token for `name` without a lock (POST /v1/tokens): drawn from the token source and ordered
  // with every grant's token of the name (as grants are with each other) before it is answered.
  // Errors: kInvalidArgument (the name), kUnavailable (grants refused, the token source, too few
  // nodes, the token store behind the lock nodes).
  using TokenHandler = std::function<void(Result<std::uint64_t>)>;
  virtual void draw_token(std::string name, TokenHandler done) = 0;

  virtual std::size_t node_count() const noexcept = 0;
  virtual std::size_t quorum() const noexcept = 0;
  // Nodes that are up and voting; a quorum of them is needed for any grant.
  virtual std::size_t voting_nodes() const noexcept = 0;
  // Nodes whose DNS name did not resolve at their last attempt (they are down).
  virtual std::size_t unresolved_nodes() const noexcept { return 0; }
  // Each lock node as it stands now, in the configured order (empty: the engine has no nodes).
  virtual std::vector<NodeStatus> node_statuses() const { return {}; }
  // Why every grant is refused right now, or nullopt (redlock_engine.h).
  virtual std::optional<std::string> grant_refusal() const = 0;
  // Why a grant with `token`, just drawn, must be refused, or nullopt — and then the token counts
  // as handed out (EngineOptions::token_order). Call refusal_check() before the draw starts: it
  // takes the floor the token must be above then. A function that stays safe to call after this
  // engine is gone: for callbacks that may run late, on another thread (a token source answering
  // at teardown).
  virtual std::function<std::optional<std::string>(std::uint64_t token)> refusal_check() const = 0;
  // Why a current token read (TokenSource::current) that answered `token` must not be shown, or
  // nullopt: grants are refused, or the token store went back (a global store's current token
  // below what the lock nodes saw handed out, which then refuses every grant too). Call it before
  // the read starts, as refusal_check().
  virtual std::function<std::optional<std::string>(std::uint64_t token)> current_check() const = 0;
  // The bounds requests are checked against (min_ttl, max_ttl, max_wait).
  virtual const EngineOptions& options() const noexcept = 0;
};

}  // namespace fencelock::storage
