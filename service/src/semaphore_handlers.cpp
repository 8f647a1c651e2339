// The handlers of counting semaphores (POST/GET/DELETE /v1/semaphores/{name}, POST
// /v1/semaphores/{name}/extend): parse → validate → call the engine's permit operations → map
// errors, as the single-lock handlers do.
//
// A permit's lease names its slot and the semaphore's permit count ("<token>.<proof>.<permits>.
// <slot>", lease_codec.h), so extend and release need nothing else. A permit counts as one lock
// against a key's max_locks. A refusal for another permit count (409 permits_mismatch) carries
// the live count, read back from the nodes.
#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>

#include "api_handlers.h"
#include "handler_support.h"
#include "lease_codec.h"

namespace fencelock::service {

namespace {

using nlohmann::json;
using storage::Result;
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
  if (!parsed.ok()) return answer(reply, from_storage_error(parsed.error()));
  const std::string owner_detail = parsed->acquire.owner;
  const bool waits = parsed->acquire.wait.count() > 0;
  const std::string owner(call.owner);
  std::shared_ptr<KeyUsage> usage = call.usage;
  if (usage) {
    if (waits && !usage->begin_wait()) {
      return answer(reply,
                    quota_error("key '" + owner + "' has " + std::to_string(*usage->max_waiters()) +
                                " acquires waiting already (max_waiters)"));
    }
    if (!usage->reserve_lock(std::chrono::steady_clock::now())) {
      if (waits) usage->end_wait();
      return answer(reply,
                    quota_error("key '" + owner + "' holds " + std::to_string(*usage->max_locks()) +
                                " locks through this fencelockd already (max_locks)"));
    }
  }
  storage::PermitRequest request{name, parsed->permits, parsed->acquire.ttl, parsed->acquire.wait,
                                 owner};
  if (waits) waiting_acquires_.fetch_add(1, std::memory_order_relaxed);
  struct Unwaiting {
    std::atomic<std::size_t>* count;
    ~Unwaiting() {
      if (count != nullptr) count->fetch_sub(1, std::memory_order_relaxed);
    }
  } unwaiting{waits ? &waiting_acquires_ : nullptr};
  const storage::AcquireTicket ticket = engine_.acquire_permit(
      std::move(request), [this, name, owner, owner_detail, usage, waits,
                           reply = std::move(reply)](Result<storage::Permit> permit) mutable {
        if (waits) waiting_acquires_.fetch_sub(1, std::memory_order_relaxed);
        if (usage) {
          if (waits) usage->end_wait();
          if (permit.ok()) {
            usage->hold(usage_key(name, permit->token), permit->started + permit->ttl);
          } else {
            usage->cancel_reservation();
          }
        }
        if (permit.ok()) {
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
            engine_.release_permit(name, permits, slot, claim, [](const Result<bool>&) {});
          };
          return reply(std::move(response));
        }
        if (permit.error().code != storage::ErrorCode::kPermitsMismatch)
          return reply(from_storage_error(permit.error()));
        // The answer names the live count, so the caller can tell which count the others use.
        engine_.inspect_semaphore(
            name, [message = permit.error().message,
                   reply = std::move(reply)](Result<storage::SemaphoreStatus> status) {
              ApiResponse response = error_response(ApiError::kPermitsMismatch, message);
              if (status.ok() && status->permits > 0) {
                json body = json::parse(response.body);
                body["error"]["permits"] = status->permits;
                response.body = body.dump();
              }
              reply(std::move(response));
            });
      });
  unwaiting.count = nullptr;  // the callback gives it back
  if (!waits) return {};
  return [ticket] { ticket.cancel(); };
}

ApiHandlers::Cancel ApiHandlers::extend_permit(const Call& call, Reply reply) {
  const std::string name(call.name);
  auto parsed = parse_permit_extend_body(call.body, limits_);
  if (!parsed.ok()) return answer(reply, from_storage_error(parsed.error()));
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
       usage = call.usage, reply = std::move(reply)](Result<storage::Extension> extension) {
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
  if (!parsed.ok()) return answer(reply, from_storage_error(parsed.error()));
  auto permit = decode_permit_lease(parsed->lease);
  if (!permit) {
    return answer(reply, error_response(ApiError::kInvalidRequest, "lease is malformed"));
  }
  permit->claim.owner = std::string(call.owner);
  const std::string owner = permit->claim.owner;
  const std::uint64_t token = permit->claim.token;
  engine_.release_permit(
      name, permit->permits, permit->slot, std::move(permit->claim),
      [name, owner, token, usage = call.usage, reply = std::move(reply)](Result<bool> released) {
        if (!released.ok()) return reply(claim_error(released.error(), owner));
        if (usage) usage->drop(usage_key(name, token));
        reply(ok(json{{"name", name}, {"released", released.value()}}));
      });
  return {};
}

ApiHandlers::Cancel ApiHandlers::semaphore_status(const Call& call, Reply reply) {
  const std::string name(call.name);
  engine_.inspect_semaphore(
      name, [name, reply = std::move(reply)](Result<storage::SemaphoreStatus> status) {
        if (!status.ok()) return reply(from_storage_error(status.error()));
        reply(ok(json{{"name", name}, {"permits", status->permits}, {"held", status->held}}));
      });
  return {};
}

}  // namespace fencelock::service
