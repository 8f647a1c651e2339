// The handlers of read/write locks (POST/GET/DELETE /v1/rwlocks/{name}, POST
// /v1/rwlocks/{name}/extend): parse → validate → call the engine's read/write lock operations →
// map errors, as the single-lock handlers do.
//
// A grant's lease names its mode ("<token>.<proof>.r" or ".w", lease_codec.h), so extend and
// release need nothing else. A grant counts as one lock against a key's max_locks; a waiting
// acquire as one waiter.
#include <memory>
#include <nlohmann/json.hpp>

#include "api/api_handlers.h"
#include "api/handler_support.h"
#include "api/lease_codec.h"

namespace fencelock::service {

namespace {

using nlohmann::json;
using namespace handler_support;

json grant_body(const std::string& name, storage::RwMode mode, std::uint64_t token,
                const std::string& proof, std::chrono::milliseconds ttl,
                std::chrono::milliseconds validity) {
  return json{
      {"name", name},   {"mode", mode_text(mode)}, {"lease", encode_rw_lease(token, proof, mode)},
      {"token", token}, {"ttl_ms", ttl.count()},   {"validity_ms", validity.count()}};
}

}  // namespace

ApiHandlers::Cancel ApiHandlers::acquire_rw(const Call& call, Reply reply) {
  const std::string name(call.name);
  auto parsed = parse_rw_acquire_body(call.body, limits_);
  if (!parsed.ok()) return answer(reply, bad_request(parsed.error()));
  const std::string owner_detail = parsed->acquire.owner;
  const bool waits = parsed->acquire.wait.count() > 0;
  const std::string owner(call.owner);
  const storage::RwMode mode = parsed->mode;
  // The key's caps (auth/key_usage.h): a waiter slot and a lock slot, given back on every outcome.
  auto pending = PendingAcquire::begin(call.usage, owner, waits, 1, waiting_acquires_);
  if (!pending.ok()) return answer(reply, std::move(pending).error());
  storage::RwLockRequest request{name,  mode,        parsed->acquire.ttl, parsed->acquire.wait,
                                 owner, owner_detail};
  storage::AcquireTicket ticket;
  try {  // the handler runs exactly once, unless the call throws: then nothing runs it
    ticket = engine_.acquire_rw(
        std::move(request),
        [this, name, mode, owner, owner_detail, usage = call.usage, pending = pending.value(),
         reply = std::move(reply)](EngineResult<storage::Lease> lease) mutable {
          if (!lease.ok()) {
            pending.refused();
            return reply(from_storage_error(lease.error()));  // 409 with retry_after_ms if known
          }
          pending.granted(name, lease->token, lease->started + lease->ttl);
          json body =
              grant_body(name, mode, lease->token, lease->proof, lease->ttl, lease->validity);
          body["waited_ms"] = lease->waited.count();
          ApiResponse response = ok(body, lease->token);
          response.log.owner = owner_detail;
          // Granted, but the client is gone: give the grant back rather than hold it for the ttl.
          response.undelivered = [this, name, mode, usage,
                                  claim = storage::LeaseClaim{lease->token, lease->proof, owner}] {
            if (usage) usage->drop(usage_key(name, claim.token));
            engine_.release_rw(name, mode, claim, [](const EngineResult<bool>&) {});
          };
          reply(std::move(response));
        });
  } catch (...) {
    pending->refused();
    throw;
  }
  if (!waits) return {};
  return [ticket] { ticket.cancel(); };
}

ApiHandlers::Cancel ApiHandlers::extend_rw(const Call& call, Reply reply) {
  const std::string name(call.name);
  auto parsed = parse_rw_extend_body(call.body, limits_);
  if (!parsed.ok()) return answer(reply, bad_request(parsed.error()));
  auto grant = decode_rw_lease(parsed->lease);
  if (!grant) return answer(reply, error_response(ApiError::kInvalidRequest, "lease is malformed"));
  grant->claim.owner = std::string(call.owner);
  const storage::RwMode mode = grant->mode;
  // The answer's token comes from what the nodes verified, never from the request alone.
  engine_.extend_rw(
      name, mode, grant->claim, parsed->ttl,
      [name, mode, proof = grant->claim.proof, owner = grant->claim.owner, usage = call.usage,
       reply = std::move(reply)](EngineResult<storage::Extension> extension) {
        if (!extension.ok()) return reply(claim_error(extension.error(), owner));
        if (usage) {
          usage->renew(usage_key(name, extension->token), extension->started + extension->ttl);
        }
        reply(
            ok(grant_body(name, mode, extension->token, proof, extension->ttl, extension->validity),
               extension->token));
      });
  return {};
}

ApiHandlers::Cancel ApiHandlers::release_rw(const Call& call, Reply reply) {
  const std::string name(call.name);
  auto parsed = parse_rw_release_body(call.body);
  if (!parsed.ok()) return answer(reply, bad_request(parsed.error()));
  auto grant = decode_rw_lease(parsed->lease);
  if (!grant) return answer(reply, error_response(ApiError::kInvalidRequest, "lease is malformed"));
  grant->claim.owner = std::string(call.owner);
  const std::string owner = grant->claim.owner;
  const std::uint64_t token = grant->claim.token;
  engine_.release_rw(name, grant->mode, std::move(grant->claim),
                     [name, owner, token, usage = call.usage,
                      reply = std::move(reply)](EngineResult<bool> released) {
                       if (!released.ok()) return reply(claim_error(released.error(), owner));
                       if (usage) usage->drop(usage_key(name, token));
                       reply(ok(json{{"name", name}, {"released", released.value()}}));
                     });
  return {};
}

ApiHandlers::Cancel ApiHandlers::rwlock_status(const Call& call, Reply reply) {
  const std::string name(call.name);
  engine_.inspect_rw(name,
                     [name, reply = std::move(reply)](EngineResult<storage::RwLockStatus> status) {
                       if (!status.ok()) return reply(from_storage_error(status.error()));
                       reply(ok(rw_status_json(name, *status)));
                     });
  return {};
}

}  // namespace fencelock::service
