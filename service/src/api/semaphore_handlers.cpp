// The handlers of counting semaphores (POST/GET/DELETE /v1/semaphores/{name}, POST
// /v1/semaphores/{name}/extend): parse → validate → call the engine's permit operations → map
// errors, as the single-lock handlers do.
//
// A permit's lease names its slot and the semaphore's permit count ("<token>.<proof>.<permits>.
// <slot>", lease_codec.h), so extend and release need nothing else. A permit counts as one lock
// against a key's max_locks. A refusal for another permit count (409 permits_mismatch) carries
// the live count, read back from the nodes.
#include <memory>
#include <nlohmann/json.hpp>

#include "api/api_handlers.h"
#include "api/handler_support.h"
#include "api/lease_codec.h"

namespace fencelock::service {

namespace {

using nlohmann::json;
using namespace handler_support;

json permit_body(const std::string& name, std::uint32_t permits, std::uint32_t slot,
                 std::uint64_t token, const std::string& proof, std::chrono::milliseconds ttl,
                 std::chrono::milliseconds validity) {
  return json{{"name", name},
              {"permits", permits},
              {"slot", slot},
              {"lease", encode_permit_lease(token, proof, permits, slot)},
              {"token", token},
              {"ttl_ms", ttl.count()},
              {"validity_ms", validity.count()}};
}

}  // namespace

ApiHandlers::Cancel ApiHandlers::acquire_permit(const Call& call, Reply reply) {
  const std::string name(call.name);
  auto parsed = parse_permit_acquire_body(call.body, limits_);
  if (!parsed.ok()) return answer(reply, bad_request(parsed.error()));
  const std::string owner_detail = parsed->acquire.owner;
  const bool waits = parsed->acquire.wait.count() > 0;
  const std::string owner(call.owner);
  // The key's caps (auth/key_usage.h): a waiter slot and a lock slot, given back on every outcome.
  auto pending = PendingAcquire::begin(call.usage, owner, waits, 1, waiting_acquires_);
  if (!pending.ok()) return answer(reply, std::move(pending).error());
  storage::PermitRequest request{name,  parsed->permits, parsed->acquire.ttl, parsed->acquire.wait,
                                 owner, owner_detail};
  storage::AcquireTicket ticket;
  try {  // the handler runs exactly once, unless the call throws: then nothing runs it
    ticket = engine_.acquire_permit(
        std::move(request),
        [this, name, owner, owner_detail, usage = call.usage, pending = pending.value(),
         reply = std::move(reply)](EngineResult<storage::Permit> permit) mutable {
          if (!permit.ok()) {
            pending.refused();
            // 409 locked carries retry_after_ms from the engine's own answers, when they tell.
            if (!permits_mismatch(permit.error())) return reply(from_storage_error(permit.error()));
            // The answer names the live count, so the caller can tell which count the others use.
            return engine_.inspect_semaphore(
                name, [message = permit.error().message,
                       reply = std::move(reply)](EngineResult<storage::SemaphoreStatus> status) {
                  ApiResponse response = error_response(ApiError::kPermitsMismatch, message);
                  if (status.ok() && status->permits > 0) {
                    json body = json::parse(response.body);
                    body["error"]["permits"] = status->permits;
                    response.body = body.dump();
                  }
                  reply(std::move(response));
                });
          }
          pending.granted(name, permit->token, permit->started + permit->ttl);
          json body = permit_body(name, permit->permits, permit->slot, permit->token, permit->proof,
                                  permit->ttl, permit->validity);
          body["waited_ms"] = permit->waited.count();
          ApiResponse response = ok(body, permit->token);
          response.log.owner = owner_detail;
          // Granted, but the client is gone: give the slot back rather than hold it for the ttl.
          response.undelivered = [this, name, usage, permits = permit->permits, slot = permit->slot,
                                  claim =
                                      storage::LeaseClaim{permit->token, permit->proof, owner}] {
            if (usage) usage->drop(usage_key(name, claim.token));
            engine_.release_permit(name, permits, slot, claim, [](const EngineResult<bool>&) {});
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

ApiHandlers::Cancel ApiHandlers::extend_permit(const Call& call, Reply reply) {
  const std::string name(call.name);
  auto parsed = parse_permit_extend_body(call.body, limits_);
  if (!parsed.ok()) return answer(reply, bad_request(parsed.error()));
  auto permit = decode_permit_lease(parsed->lease);
  if (!permit) {
    return answer(reply, error_response(ApiError::kInvalidRequest, "lease is malformed"));
  }
  permit->claim.owner = std::string(call.owner);
  const std::uint32_t permits = permit->permits;
  const std::uint32_t slot = permit->slot;
  // The answer's token comes from what the nodes verified, never from the request alone.
  engine_.extend_permit(
      name, permits, slot, permit->claim, parsed->ttl,
      [name, permits, slot, proof = permit->claim.proof, owner = permit->claim.owner,
       usage = call.usage, reply = std::move(reply)](EngineResult<storage::Extension> extension) {
        if (!extension.ok()) return reply(claim_error(extension.error(), owner));
        if (usage) {
          usage->renew(usage_key(name, extension->token), extension->started + extension->ttl);
        }
        reply(ok(permit_body(name, permits, slot, extension->token, proof, extension->ttl,
                             extension->validity),
                 extension->token));
      });
  return {};
}

ApiHandlers::Cancel ApiHandlers::release_permit(const Call& call, Reply reply) {
  const std::string name(call.name);
  auto parsed = parse_permit_release_body(call.body);
  if (!parsed.ok()) return answer(reply, bad_request(parsed.error()));
  auto permit = decode_permit_lease(parsed->lease);
  if (!permit) {
    return answer(reply, error_response(ApiError::kInvalidRequest, "lease is malformed"));
  }
  permit->claim.owner = std::string(call.owner);
  const std::string owner = permit->claim.owner;
  const std::uint64_t token = permit->claim.token;
  engine_.release_permit(name, permit->permits, permit->slot, std::move(permit->claim),
                         [name, owner, token, usage = call.usage,
                          reply = std::move(reply)](EngineResult<bool> released) {
                           if (!released.ok()) return reply(claim_error(released.error(), owner));
                           if (usage) usage->drop(usage_key(name, token));
                           reply(ok(json{{"name", name}, {"released", released.value()}}));
                         });
  return {};
}

ApiHandlers::Cancel ApiHandlers::semaphore_status(const Call& call, Reply reply) {
  const std::string name(call.name);
  engine_.inspect_semaphore(
      name, [name, reply = std::move(reply)](EngineResult<storage::SemaphoreStatus> status) {
        if (!status.ok()) return reply(from_storage_error(status.error()));
        reply(ok(semaphore_status_json(name, *status)));
      });
  return {};
}

}  // namespace fencelock::service
