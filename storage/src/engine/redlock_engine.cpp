#include "fencelock/storage/redlock_engine.h"

#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "engine/acquire_operation.h"
#include "engine/engine_core.h"
#include "engine/inspect_rw_operation.h"
#include "engine/lease_value.h"
#include "engine/list_kinds.h"
#include "engine/list_operation.h"
#include "engine/script_operation.h"
#include "engine/token_draw_operation.h"
#include "fencelock/names.h"
#include "fencelock/storage/lease_secret.h"

namespace fencelock::storage {

namespace asio = boost::asio;
using std::chrono::milliseconds;

namespace {

Status check_name(const std::string& name) {
  if (!is_valid_lock_name(name))
    return make_error(ErrorCode::kInvalidArgument, std::string(kLockNameRule));
  return Done{};
}

Status check_ttl(const EngineOptions& options, milliseconds ttl) {
  if (ttl < options.min_ttl || ttl > options.max_ttl) {
    return make_error(ErrorCode::kInvalidArgument,
                      "ttl must be between " + std::to_string(options.min_ttl.count()) +
                          " ms and " + std::to_string(options.max_ttl.count()) + " ms");
  }
  return Done{};
}

Status check_owner(std::string_view owner) {
  if (!is_valid_lease_owner(owner)) {
    return make_error(ErrorCode::kInvalidArgument, "a lease owner is at most " +
                                                       std::to_string(kMaxLeaseOwnerLength) +
                                                       " characters of [A-Za-z0-9._-]");
  }
  return Done{};
}

Status check_wait(const EngineOptions& options, milliseconds wait) {
  if (wait < milliseconds(0) || wait > options.max_wait) {
    return make_error(
        ErrorCode::kInvalidArgument,
        "wait must be between 0 ms and " + std::to_string(options.max_wait.count()) + " ms");
  }
  return Done{};
}

// A lock set's names: 1..kMaxLockSetNames valid, distinct names. Sorts them into canonical order
// unless they are in it already (the service sends an extend's or release's names sorted).
Status check_set_names(std::vector<std::string>& names) {
  if (names.empty() || names.size() > kMaxLockSetNames) {
    return make_error(ErrorCode::kInvalidArgument,
                      "a lock set has 1 to " + std::to_string(kMaxLockSetNames) + " names");
  }
  for (const auto& name : names) {
    if (Status valid = check_name(name); !valid.ok()) return valid;
  }
  if (!std::is_sorted(names.begin(), names.end())) std::sort(names.begin(), names.end());
  if (std::adjacent_find(names.begin(), names.end()) != names.end()) {
    return make_error(ErrorCode::kInvalidArgument, "a lock set's names must be distinct");
  }
  return Done{};
}

// A lock set's claim: one token per name.
Status check_set_claim(const std::vector<std::string>& names, const LockSetClaim& claim) {
  if (claim.tokens.size() != names.size()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the lease carries " + std::to_string(claim.tokens.size()) + " tokens for " +
                          std::to_string(names.size()) + " names");
  }
  if (!is_well_formed_lease_proof(claim.proof)) {
    return make_error(ErrorCode::kInvalidArgument, "lease is malformed");
  }
  return check_owner(claim.owner);
}

Status check_permits(std::uint32_t permits) {
  if (permits < 1 || permits > kMaxPermits) {
    return make_error(ErrorCode::kInvalidArgument,
                      "permits must be between 1 and " + std::to_string(kMaxPermits));
  }
  return Done{};
}

Status check_slot(std::uint32_t permits, std::uint32_t slot) {
  if (Status valid = check_permits(permits); !valid.ok()) return valid;
  if (slot >= permits) {
    return make_error(ErrorCode::kInvalidArgument, "the permit's slot is not below its count");
  }
  return Done{};
}

Status check_claim(const LeaseClaim& claim) {
  if (!is_well_formed_lease_proof(claim.proof)) {
    return make_error(ErrorCode::kInvalidArgument, "lease is malformed");
  }
  return check_owner(claim.owner);
}

// Invalid arguments are answered on the strand too, never inside the caller's call.
template <class Handler, class Value>
void answer_later(const std::shared_ptr<EngineCore>& core, Handler done, Value value) {
  asio::post(core->strand(), [done = std::move(done), value = std::move(value)]() mutable {
    done(std::move(value));
  });
}

// What extend, extend_set and extend_permit share, on the strand: an extend to a ttl that another
// live instance does not know yet is refused before any node is asked (InstanceRegistry).
void start_extend(const std::shared_ptr<EngineCore>& core, ClaimTarget target, std::uint64_t token,
                  milliseconds ttl, std::function<void(Result<Extension>)> done,
                  const std::string& extra = {}) {
  if (auto refusal = core->ttl_refusal(ttl)) {
    done(Result<Extension>(make_error(ErrorCode::kUnavailable, std::move(*refusal))));
    return;
  }
  std::make_shared<ExtendOperation>(core, std::move(target), token, ttl, std::move(done), extra)
      ->start();
}

// What every acquire shares once its own arguments are checked (`valid`): the owner, ttl and wait
// checks, a fresh lease value, and the operation started on the strand with the shape that
// `make_shape(lease id, done)` builds. An invalid request or a failed value is answered on the
// strand, never inside the call.
template <class Granted, class MakeShape>
AcquireTicket start_acquire(const std::shared_ptr<EngineCore>& core, Status valid,
                            AcquireTarget target, std::function<void(Result<Granted>)> done,
                            MakeShape make_shape) {
  if (valid.ok()) valid = check_owner(target.owner);
  if (valid.ok() && !is_valid_holder(target.holder)) {
    valid = make_error(ErrorCode::kInvalidArgument, "owner must be at most " +
                                                        std::to_string(kMaxHolderLength) +
                                                        " bytes without control characters");
  }
  if (valid.ok()) valid = check_ttl(core->options(), target.ttl);
  if (valid.ok()) valid = check_wait(core->options(), target.wait);
  if (!valid.ok()) {
    answer_later(core, std::move(done), Result<Granted>(std::move(valid).error()));
    return {};
  }
  Result<std::string> value = generate_lease_value();
  if (!value.ok()) {
    answer_later(core, std::move(done), Result<Granted>(std::move(value).error()));
    return {};
  }
  auto shape =
      make_shape(std::string_view(value.value()).substr(0, kLeaseIdLength), std::move(done));
  auto operation = std::make_shared<AcquireOperation>(core, std::move(target),
                                                      std::move(value).value(), std::move(shape));
  asio::dispatch(core->strand(), [operation] { operation->start(); });
  // A cancel is posted to the strand after the start above, so it always finds the operation
  // started.
  return AcquireTicket(std::weak_ptr<detail::CancellableAcquire>(operation));
}

}  // namespace

Result<std::unique_ptr<RedlockEngine>> RedlockEngine::create(const asio::any_io_executor& executor,
                                                             EngineOptions options,
                                                             std::shared_ptr<TokenSource> tokens,
                                                             EngineObserver* observer) {
  if (Status valid = validate_engine_options(options); !valid.ok()) return std::move(valid).error();
  asio::any_io_executor strand = asio::make_strand(executor);
  auto core = std::make_shared<EngineCore>(strand, std::move(options), std::move(tokens), observer);
  return std::unique_ptr<RedlockEngine>(new RedlockEngine(std::move(core)));
}

RedlockEngine::RedlockEngine(std::shared_ptr<EngineCore> core) : core_(std::move(core)) {}

RedlockEngine::~RedlockEngine() {
  stop();
}

void RedlockEngine::start() {
  asio::dispatch(core_->strand(), [core = core_] { core->start(); });
}

void RedlockEngine::stop() {
  asio::dispatch(core_->strand(), [core = core_] { core->stop(); });
}

AcquireTicket RedlockEngine::acquire(AcquireRequest request, AcquireHandler done) {
  Status valid = check_name(request.name);
  AcquireTarget target;
  target.names.push_back(std::move(request.name));
  target.ttl = request.ttl;
  target.wait = request.wait;
  if (valid.ok() && !request.request_id.empty()) {
    if (is_valid_request_id(request.request_id)) {
      target.request = request_digest(request.owner, target.names.front(), request.request_id);
    } else {
      valid = make_error(ErrorCode::kInvalidArgument,
                         "request_id must be 1 to " + std::to_string(kMaxRequestIdLength) +
                             " printable ASCII characters without spaces");
    }
  }
  target.owner = std::move(request.owner);
  target.holder = std::move(request.holder);
  const std::string name = target.names.front();
  return start_acquire<Lease>(core_, std::move(valid), std::move(target), std::move(done),
                              [&](std::string_view, AcquireHandler answer) {
                                return lock_shape(*core_, name, std::move(answer));
                              });
}

AcquireTicket RedlockEngine::revoke(AcquireRequest request, AcquireHandler done) {
  Status valid = check_name(request.name);
  if (valid.ok() && !request.request_id.empty())
    valid = make_error(ErrorCode::kInvalidArgument, "a revoke takes no request_id");
  if (valid.ok() && core_->tokens() == nullptr) {
    valid = make_error(ErrorCode::kInvalidArgument,
                       "revoke needs fencing tokens: without them the revoked holder could still "
                       "write");
  }
  AcquireTarget target;
  target.names.push_back(std::move(request.name));
  target.ttl = request.ttl;
  target.owner = std::move(request.owner);
  target.holder = std::move(request.holder);
  const std::string name = target.names.front();
  return start_acquire<Lease>(core_, std::move(valid), std::move(target), std::move(done),
                              [&](std::string_view lease_id, AcquireHandler answer) {
                                return revoke_shape(*core_, name, lease_id, std::move(answer));
                              });
}

void RedlockEngine::extend(std::string name, LeaseClaim claim, milliseconds ttl,
                           ExtendHandler done) {
  Status valid = check_name(name);
  if (valid.ok()) valid = check_claim(claim);
  if (valid.ok()) valid = check_ttl(core_->options(), ttl);
  if (!valid.ok())
    return answer_later(core_, std::move(done), Result<Extension>(std::move(valid).error()));
  asio::dispatch(core_->strand(), [core = core_, name = std::move(name), claim = std::move(claim),
                                   ttl, done = std::move(done)]() mutable {
    const std::uint64_t token = claim.token;
    start_extend(core, lock_claim(*core, Script::kExtend, name, claim), token, ttl,
                 std::move(done));
  });
}

void RedlockEngine::release(std::string name, LeaseClaim claim, ReleaseHandler done) {
  Status valid = check_name(name);
  if (valid.ok()) valid = check_claim(claim);
  if (!valid.ok())
    return answer_later(core_, std::move(done), Result<bool>(std::move(valid).error()));
  asio::dispatch(core_->strand(), [core = core_, name = std::move(name), claim = std::move(claim),
                                   done = std::move(done)]() mutable {
    const Script script = claim.unless_repeated ? Script::kReleaseUnlessRepeated : Script::kRelease;
    ClaimTarget target = lock_claim(*core, script, name, claim);
    std::string tag = release_tag_for(*core, target.names);
    std::make_shared<ReleaseOperation>(core, std::move(target), std::move(tag), std::move(done))
        ->start();
  });
}

void RedlockEngine::inspect(std::string name, InspectHandler done) {
  Status valid = check_name(name);
  if (!valid.ok())
    return answer_later(core_, std::move(done), Result<LockStatus>(std::move(valid).error()));
  asio::dispatch(core_->strand(),
                 [core = core_, name = std::move(name), done = std::move(done)]() mutable {
                   std::make_shared<InspectOperation>(
                       core, std::vector<std::string>{core->key_of(name)},
                       [done = std::move(done), name](Result<Inspection> inspection) {
                         if (!inspection.ok())
                           return done(Result<LockStatus>(std::move(inspection).error()));
                         done(known_status(std::move(inspection->keys.front()), name));
                       })
                       ->start();
                 });
}

AcquireTicket RedlockEngine::watch(std::string name, std::uint64_t after_token,
                                   std::chrono::milliseconds wait, InspectHandler done) {
  Status valid = check_name(name);
  if (valid.ok()) valid = check_wait(core_->options(), wait);
  if (!valid.ok()) {
    answer_later(core_, std::move(done), Result<LockStatus>(std::move(valid).error()));
    return {};
  }
  return core_->watches().watch(std::move(name), after_token, wait, std::move(done));
}

namespace {

// One page of a listing of `Kind` (list_kinds.h).
template <class Kind>
void start_listing(const std::shared_ptr<EngineCore>& core, ListRequest request,
                   std::function<void(Result<typename Kind::Page>)> done) {
  using Page = typename Kind::Page;
  Status valid = ListOperation::check_list_request(request, core->node_count());
  if (!valid.ok())
    return answer_later(core, std::move(done), Result<Page>(std::move(valid).error()));
  asio::dispatch(
      core->strand(), [core, request = std::move(request), done = std::move(done)]() mutable {
        auto kind = std::make_shared<Kind>();
        auto listed = [kind, done = std::move(done)](Result<std::string> next) {
          if (!next.ok()) return done(Result<Page>(std::move(next).error()));
          done(kind->take_page(std::move(next).value()));
        };
        std::make_shared<ListOperation>(core, std::move(request), kind, std::move(listed))->start();
      });
}

}  // namespace

void RedlockEngine::list(ListRequest request, ListHandler done) {
  start_listing<LockListKind>(core_, std::move(request), std::move(done));
}

void RedlockEngine::list_semaphores(ListRequest request, SemaphoreListHandler done) {
  start_listing<SemaphoreListKind>(core_, std::move(request), std::move(done));
}

void RedlockEngine::list_rwlocks(ListRequest request, RwLockListHandler done) {
  start_listing<RwLockListKind>(core_, std::move(request), std::move(done));
}

AcquireTicket RedlockEngine::acquire_set(LockSetRequest request, LockSetHandler done) {
  Status valid = check_set_names(request.names);
  AcquireTarget target;
  target.names = std::move(request.names);
  target.ttl = request.ttl;
  target.wait = request.wait;
  target.owner = std::move(request.owner);
  target.holder = std::move(request.holder);
  const std::vector<std::string> names = target.names;
  return start_acquire<LockSetLease>(core_, std::move(valid), std::move(target), std::move(done),
                                     [&](std::string_view, LockSetHandler answer) {
                                       return set_shape(*core_, names, std::move(answer));
                                     });
}

void RedlockEngine::extend_set(std::vector<std::string> names, LockSetClaim claim, milliseconds ttl,
                               LockSetExtendHandler done) {
  Status valid = check_set_names(names);
  if (valid.ok()) valid = check_set_claim(names, claim);
  if (valid.ok()) valid = check_ttl(core_->options(), ttl);
  if (!valid.ok()) {
    return answer_later(core_, std::move(done), Result<LockSetExtension>(std::move(valid).error()));
  }
  asio::dispatch(core_->strand(), [core = core_, names = std::move(names), claim = std::move(claim),
                                   ttl, done = std::move(done)]() mutable {
    auto answer = [tokens = claim.tokens,
                   done = std::move(done)](Result<Extension> extension) mutable {
      if (!extension.ok()) return done(Result<LockSetExtension>(std::move(extension).error()));
      const Extension& e = extension.value();
      done(Result<LockSetExtension>(
          LockSetExtension{std::move(tokens), e.ttl, e.validity, e.started}));
    };
    start_extend(core, set_claim(*core, Script::kExtendSet, std::move(names), claim),
                 claim.tokens.front(), ttl, std::move(answer));
  });
}

void RedlockEngine::release_set(std::vector<std::string> names, LockSetClaim claim,
                                ReleaseHandler done) {
  Status valid = check_set_names(names);
  if (valid.ok()) valid = check_set_claim(names, claim);
  if (!valid.ok())
    return answer_later(core_, std::move(done), Result<bool>(std::move(valid).error()));
  asio::dispatch(core_->strand(), [core = core_, names = std::move(names), claim = std::move(claim),
                                   done = std::move(done)]() mutable {
    ClaimTarget target = set_claim(*core, Script::kReleaseSet, std::move(names), claim);
    std::string tag = release_tag_for(*core, target.names);
    std::make_shared<ReleaseOperation>(core, std::move(target), std::move(tag), std::move(done))
        ->start();
  });
}

AcquireTicket RedlockEngine::acquire_permit(PermitRequest request, PermitHandler done) {
  Status valid = check_name(request.name);
  if (valid.ok()) valid = check_permits(request.permits);
  AcquireTarget target;
  target.names.push_back(std::move(request.name));
  target.ttl = request.ttl;
  target.wait = request.wait;
  target.owner = std::move(request.owner);
  target.holder = std::move(request.holder);
  const std::string name = target.names.front();
  return start_acquire<Permit>(core_, std::move(valid), std::move(target), std::move(done),
                               [&](std::string_view, PermitHandler answer) {
                                 return permit_shape(*core_, name, request.permits,
                                                     std::move(answer));
                               });
}

void RedlockEngine::extend_permit(std::string name, std::uint32_t permits, std::uint32_t slot,
                                  LeaseClaim claim, milliseconds ttl, ExtendHandler done) {
  Status valid = check_name(name);
  if (valid.ok()) valid = check_slot(permits, slot);
  if (valid.ok()) valid = check_claim(claim);
  if (valid.ok()) valid = check_ttl(core_->options(), ttl);
  if (!valid.ok())
    return answer_later(core_, std::move(done), Result<Extension>(std::move(valid).error()));
  asio::dispatch(
      core_->strand(), [core = core_, name = std::move(name), permits, slot,
                        claim = std::move(claim), ttl, done = std::move(done)]() mutable {
        start_extend(core, permit_claim(*core, Script::kExtendPermit, name, permits, slot, claim),
                     claim.token, ttl, std::move(done), std::to_string(permits));
      });
}

void RedlockEngine::release_permit(std::string name, std::uint32_t permits, std::uint32_t slot,
                                   LeaseClaim claim, ReleaseHandler done) {
  Status valid = check_name(name);
  if (valid.ok()) valid = check_slot(permits, slot);
  if (valid.ok()) valid = check_claim(claim);
  if (!valid.ok())
    return answer_later(core_, std::move(done), Result<bool>(std::move(valid).error()));
  asio::dispatch(core_->strand(), [core = core_, name = std::move(name), permits, slot,
                                   claim = std::move(claim), done = std::move(done)]() mutable {
    ClaimTarget target = permit_claim(*core, Script::kReleasePermit, name, permits, slot, claim);
    std::string tag = release_tag_for(*core, target.names);
    std::make_shared<ReleaseOperation>(core, std::move(target), std::move(tag), std::move(done))
        ->start();
  });
}

AcquireTicket RedlockEngine::acquire_rw(RwLockRequest request, AcquireHandler done) {
  Status valid = check_name(request.name);
  AcquireTarget target;
  target.names.push_back(std::move(request.name));
  target.ttl = request.ttl;
  target.wait = request.wait;
  target.owner = std::move(request.owner);
  target.holder = std::move(request.holder);
  const std::string name = target.names.front();
  return start_acquire<Lease>(core_, std::move(valid), std::move(target), std::move(done),
                              [&](std::string_view lease_id, AcquireHandler answer) {
                                return rw_shape(*core_, name, request.mode, lease_id,
                                                std::move(answer));
                              });
}

void RedlockEngine::extend_rw(std::string name, RwMode mode, LeaseClaim claim, milliseconds ttl,
                              ExtendHandler done) {
  Status valid = check_name(name);
  if (valid.ok()) valid = check_claim(claim);
  if (valid.ok()) valid = check_ttl(core_->options(), ttl);
  if (!valid.ok())
    return answer_later(core_, std::move(done), Result<Extension>(std::move(valid).error()));
  asio::dispatch(
      core_->strand(), [core = core_, name = std::move(name), mode, claim = std::move(claim), ttl,
                        done = std::move(done)]() mutable {
        start_extend(core, rw_claim(*core, Script::kExtendRw, name, mode, claim), claim.token, ttl,
                     std::move(done), mode == RwMode::kWrite ? "w" : "r");
      });
}

void RedlockEngine::release_rw(std::string name, RwMode mode, LeaseClaim claim,
                               ReleaseHandler done) {
  Status valid = check_name(name);
  if (valid.ok()) valid = check_claim(claim);
  if (!valid.ok())
    return answer_later(core_, std::move(done), Result<bool>(std::move(valid).error()));
  asio::dispatch(core_->strand(), [core = core_, name = std::move(name), mode,
                                   claim = std::move(claim), done = std::move(done)]() mutable {
    ClaimTarget target = rw_claim(*core, Script::kReleaseRw, name, mode, claim);
    target.keys.push_back(core->key_of(rw_writer_name(name)));
    std::string tag = release_tag_for(*core, target.names);
    std::make_shared<ReleaseOperation>(core, std::move(target), std::move(tag), std::move(done))
        ->start();
  });
}

void RedlockEngine::inspect_rw(std::string name, RwStatusHandler done) {
  Status valid = check_name(name);
  if (!valid.ok())
    return answer_later(core_, std::move(done), Result<RwLockStatus>(std::move(valid).error()));
  asio::dispatch(core_->strand(),
                 [core = core_, name = std::move(name), done = std::move(done)]() mutable {
                   auto status = [done = std::move(done), name](Result<RwInspection> inspection) {
                     if (!inspection.ok()) return done(std::move(inspection).error());
                     if (inspection->maybe_held) return done(maybe_held_error(name));
                     done(std::move(inspection->status));
                   };
                   std::make_shared<InspectRwOperation>(core, name, std::move(status))->start();
                 });
}

void RedlockEngine::draw_token(std::string name, TokenHandler done) {
  Status valid = check_name(name);
  if (!valid.ok()) {
    return answer_later(core_, std::move(done), Result<std::uint64_t>(std::move(valid).error()));
  }
  asio::dispatch(
      core_->strand(), [core = core_, name = std::move(name), done = std::move(done)]() mutable {
        std::make_shared<TokenDrawOperation>(core, std::move(name), std::move(done))->start();
      });
}

void RedlockEngine::inspect_semaphore(std::string name, SemaphoreStatusHandler done) {
  Status valid = check_name(name);
  if (!valid.ok()) {
    return answer_later(core_, std::move(done), Result<SemaphoreStatus>(std::move(valid).error()));
  }
  asio::dispatch(
      core_->strand(), [core = core_, name = std::move(name), done = std::move(done)]() mutable {
        auto status = [done = std::move(done), name](Result<SemaphoreInspection> inspection) {
          if (!inspection.ok()) return done(std::move(inspection).error());
          // `held` could be short by a permit the silent nodes hold: never say so.
          if (inspection->maybe_held) return done(maybe_held_error(name));
          done(inspection->status);
        };
        std::make_shared<InspectSemaphoreOperation>(core, core->key_of(permit_config_name(name)),
                                                    std::move(status))
            ->start();
      });
}

std::size_t RedlockEngine::node_count() const noexcept {
  return core_->node_count();
}
std::size_t RedlockEngine::quorum() const noexcept {
  return core_->quorum();
}
std::size_t RedlockEngine::voting_nodes() const noexcept {
  return core_->voting_nodes();
}

std::size_t RedlockEngine::unresolved_nodes() const noexcept {
  std::size_t unresolved = 0;
  for (std::size_t i = 0; i < core_->node_count(); ++i) {
    if (core_->node(i).counters().unresolved.load(std::memory_order_relaxed)) ++unresolved;
  }
  return unresolved;
}
const EngineOptions& RedlockEngine::options() const noexcept {
  return core_->options();
}
std::optional<std::string> RedlockEngine::grant_refusal() const {
  return core_->grant_refusal();
}
std::function<std::optional<std::string>(std::uint64_t)> RedlockEngine::refusal_check() const {
  return [core = core_, floor = core_->token_floor()](std::uint64_t token) {
    return core->token_refusal(token, floor);
  };
}
std::function<std::optional<std::string>(std::uint64_t)> RedlockEngine::current_check() const {
  return [core = core_, floor = core_->token_floor()](std::uint64_t token) {
    return core->current_refusal(token, floor);
  };
}

std::vector<NodeStatus> RedlockEngine::node_statuses() const {
  std::vector<NodeStatus> out;
  for (std::size_t i = 0; i < core_->node_count(); ++i) {
    const RedisNode& node = core_->node(i);
    const NodeCounters& c = node.counters();
    NodeStatus status;
    status.address = node.address();
    status.up = c.up.load(std::memory_order_relaxed);
    status.quarantined = core_->node_quarantined(i);
    status.commands = c.commands.load(std::memory_order_relaxed);
    status.errors = c.errors.load(std::memory_order_relaxed);
    status.timeouts = c.timeouts.load(std::memory_order_relaxed);
    status.disconnects = c.disconnects.load(std::memory_order_relaxed);
    status.unresolved = c.unresolved.load(std::memory_order_relaxed);
    status.resolve_failures = c.resolve_failures.load(std::memory_order_relaxed);
    status.address_changes = c.address_changes.load(std::memory_order_relaxed);
    status.refused = core_->node_refusal(i);
    status.votes_again_in = core_->votes_again_in(i);
    status.unjudged = core_->node_unjudged(i);
    out.push_back(std::move(status));
  }
  return out;
}

}  // namespace fencelock::storage
