#include "fencelock/storage/redlock_engine.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "engine/acquire_operation.h"
#include "engine/engine_core.h"
#include "engine/script_operation.h"
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
  if (valid.ok()) valid = check_owner(request.owner);
  if (valid.ok()) valid = check_ttl(core_->options(), request.ttl);
  if (valid.ok() && (request.wait < milliseconds(0) || request.wait > core_->options().max_wait)) {
    valid = make_error(ErrorCode::kInvalidArgument,
                       "wait must be between 0 ms and " +
                           std::to_string(core_->options().max_wait.count()) + " ms");
  }
  if (!valid.ok()) {
    answer_later(core_, std::move(done), Result<Lease>(std::move(valid).error()));
    return {};
  }
  Result<std::string> value = generate_lease_value();
  if (!value.ok()) {
    answer_later(core_, std::move(done), Result<Lease>(std::move(value).error()));
    return {};
  }
  auto operation = std::make_shared<AcquireOperation>(core_, std::move(request),
                                                      std::move(value).value(), std::move(done));
  asio::dispatch(core_->strand(), [operation] { operation->start(); });
  // A cancel is posted to the strand after the start above, so it always finds the operation
  // started.
  return AcquireTicket(std::weak_ptr<detail::CancellableAcquire>(operation));
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
    std::make_shared<ExtendOperation>(core, name, std::move(claim), ttl, std::move(done))->start();
  });
}

void RedlockEngine::release(std::string name, LeaseClaim claim, ReleaseHandler done) {
  Status valid = check_name(name);
  if (valid.ok()) valid = check_claim(claim);
  if (!valid.ok())
    return answer_later(core_, std::move(done), Result<bool>(std::move(valid).error()));
  asio::dispatch(core_->strand(), [core = core_, name = std::move(name), claim = std::move(claim),
                                   done = std::move(done)]() mutable {
    std::make_shared<ReleaseOperation>(core, name, std::move(claim), std::move(done))->start();
  });
}

void RedlockEngine::inspect(std::string name, InspectHandler done) {
  Status valid = check_name(name);
  if (!valid.ok())
    return answer_later(core_, std::move(done), Result<LockStatus>(std::move(valid).error()));
  asio::dispatch(core_->strand(),
                 [core = core_, name = std::move(name), done = std::move(done)]() mutable {
                   std::make_shared<InspectOperation>(core, name, std::move(done))->start();
                 });
}

namespace {
Error not_built_yet() {
  return make_error(ErrorCode::kInternal, "lock sets and semaphores are not implemented yet");
}
}  // namespace

AcquireTicket RedlockEngine::acquire_set(LockSetRequest, LockSetHandler done) {
  answer_later(core_, std::move(done), Result<LockSetLease>(not_built_yet()));
  return {};
}
void RedlockEngine::extend_set(std::vector<std::string>, LockSetClaim, milliseconds,
                               LockSetExtendHandler done) {
  answer_later(core_, std::move(done), Result<LockSetExtension>(not_built_yet()));
}
void RedlockEngine::release_set(std::vector<std::string>, LockSetClaim, ReleaseHandler done) {
  answer_later(core_, std::move(done), Result<bool>(not_built_yet()));
}
AcquireTicket RedlockEngine::acquire_permit(PermitRequest, PermitHandler done) {
  answer_later(core_, std::move(done), Result<Permit>(not_built_yet()));
  return {};
}
void RedlockEngine::extend_permit(std::string, std::uint32_t, std::uint32_t, LeaseClaim,
                                  milliseconds, ExtendHandler done) {
  answer_later(core_, std::move(done), Result<Extension>(not_built_yet()));
}
void RedlockEngine::release_permit(std::string, std::uint32_t, std::uint32_t, LeaseClaim,
                                   ReleaseHandler done) {
  answer_later(core_, std::move(done), Result<bool>(not_built_yet()));
}
void RedlockEngine::inspect_semaphore(std::string, SemaphoreStatusHandler done) {
  answer_later(core_, std::move(done), Result<SemaphoreStatus>(not_built_yet()));
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
    out.push_back(std::move(status));
  }
  return out;
}

}  // namespace fencelock::storage
