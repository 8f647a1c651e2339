// The handlers of lock sets (POST /v1/locks, POST /v1/locks:extend, DELETE /v1/locks): parse →
// validate → call the engine's set operations → map errors, as the single-lock handlers do.
//
// The engine sorts an acquire's names; answers list them in that canonical order, and the lease
// carries one token per name in the same order. A client may send the names of an extend or
// release in any order: they are sorted here, once, before the lease's tokens are paired with
// them (the engine then finds them sorted). A key's max_locks counts a set as one lock per name;
// each name is tracked as "<name>#<token>".
#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "api/api_handlers.h"
#include "api/handler_support.h"
#include "api/lease_codec.h"

namespace fencelock::service {

namespace {

using nlohmann::json;
using namespace handler_support;

json tokens_object(const std::vector<std::string>& names,
                   const std::vector<std::uint64_t>& tokens) {
  json object = json::object();
  for (std::size_t i = 0; i < names.size() && i < tokens.size(); ++i) object[names[i]] = tokens[i];
  return object;
}

json set_lease_body(const std::vector<std::string>& names, const std::vector<std::uint64_t>& tokens,
                    const std::string& proof, std::chrono::milliseconds ttl,
                    std::chrono::milliseconds validity) {
  return json{{"names", names},
              {"lease", encode_set_lease(tokens, proof)},
              {"tokens", tokens_object(names, tokens)},
              {"ttl_ms", ttl.count()},
              {"validity_ms", validity.count()}};
}

// The highest token of a set, for the request log's one token field.
std::optional<std::uint64_t> highest(const std::vector<std::uint64_t>& tokens) {
  if (tokens.empty()) return std::nullopt;
  return *std::max_element(tokens.begin(), tokens.end());
}

// What an extend or release of a lock set works on: its names in canonical order (the order of
// the lease's tokens) and the claim its lease decodes to, bound to the caller's key `owner`.
struct SetClaimCall {
  std::vector<std::string> sorted;
  storage::LockSetClaim claim;
};

// The SetClaimCall of `names` (as sent) and `lease`, or the 400 to answer if the lease does not
// decode to one token per name.
BasicResult<SetClaimCall, ApiResponse> set_claim_call(std::vector<std::string> names,
                                                      std::string_view lease,
                                                      std::string_view owner) {
  auto claim = decode_set_lease(lease, names.size());
  if (!claim) {
    return ApiHandlers::error_response(ApiError::kInvalidRequest,
                                       "lease is malformed, or does not hold one token per name (" +
                                           std::to_string(names.size()) + ")");
  }
  claim->owner = std::string(owner);
  std::sort(names.begin(), names.end());
  return SetClaimCall{std::move(names), std::move(*claim)};
}

}  // namespace

ApiHandlers::Cancel ApiHandlers::acquire_set(const Call& call, Reply reply) {
  auto parsed = parse_set_acquire_body(call.body, limits_);
  if (!parsed.ok()) return answer(reply, bad_request(parsed.error()));
  const std::string owner_detail = parsed->acquire.owner;
  const bool waits = parsed->acquire.wait.count() > 0;
  const std::string owner(call.owner);
  // The key's caps (auth/key_usage.h): a waiter slot and a lock slot per name, given back on every
  // outcome.
  auto pending =
      PendingAcquire::begin(call.usage, owner, waits, parsed->names.size(), waiting_acquires_);
  if (!pending.ok()) return answer(reply, std::move(pending).error());
  storage::LockSetRequest request{std::move(parsed->names), parsed->acquire.ttl,
                                  parsed->acquire.wait, owner, owner_detail};
  storage::AcquireTicket ticket;
  try {  // the handler runs exactly once, unless the call throws: then nothing runs it
    ticket = engine_.acquire_set(
        std::move(request),
        [this, owner, owner_detail, usage = call.usage, pending = pending.value(),
         reply = std::move(reply)](EngineResult<storage::LockSetLease> lease) mutable {
          // A refusal (409 locked) carries retry_after_ms from the engine's own answers: when the
          // set's names held now are all free again.
          if (!lease.ok()) {
            pending.refused();
            return reply(from_storage_error(lease.error()));
          }
          pending.granted(lease->names, lease->tokens, lease->started + lease->ttl);
          json body = set_lease_body(lease->names, lease->tokens, lease->proof, lease->ttl,
                                     lease->validity);
          body["waited_ms"] = lease->waited.count();
          ApiResponse response = ok(body, highest(lease->tokens));
          response.log.owner = owner_detail;
          // Granted, but the client is gone: release now rather than hold the names for the ttl.
          response.undelivered = [this, usage, sorted = lease->names,
                                  claim =
                                      storage::LockSetClaim{lease->tokens, lease->proof, owner}] {
            if (usage) {
              for (std::size_t i = 0; i < sorted.size(); ++i)
                usage->drop(usage_key(sorted[i], claim.tokens[i]));
            }
            engine_.release_set(sorted, claim, [](const EngineResult<bool>&) {});
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

ApiHandlers::Cancel ApiHandlers::extend_set(const Call& call, Reply reply) {
  auto parsed = parse_set_extend_body(call.body, limits_);
  if (!parsed.ok()) return answer(reply, bad_request(parsed.error()));
  auto set = set_claim_call(std::move(parsed->names), parsed->extend.lease, call.owner);
  if (!set.ok()) return answer(reply, std::move(set).error());
  std::vector<std::string> sorted = set->sorted;
  // The answer's tokens come from what the nodes verified, never from the request alone.
  engine_.extend_set(
      std::move(set->sorted), set->claim, parsed->extend.ttl,
      [sorted = std::move(sorted), proof = set->claim.proof, usage = call.usage,
       owner = set->claim.owner,
       reply = std::move(reply)](EngineResult<storage::LockSetExtension> extension) {
        if (!extension.ok()) return reply(claim_error(extension.error(), owner));
        if (usage) {
          for (std::size_t i = 0; i < sorted.size() && i < extension->tokens.size(); ++i) {
            usage->renew(usage_key(sorted[i], extension->tokens[i]),
                         extension->started + extension->ttl);
          }
        }
        reply(ok(
            set_lease_body(sorted, extension->tokens, proof, extension->ttl, extension->validity),
            highest(extension->tokens)));
      });
  return {};
}

ApiHandlers::Cancel ApiHandlers::release_set(const Call& call, Reply reply) {
  auto parsed = parse_set_release_body(call.body);
  if (!parsed.ok()) return answer(reply, bad_request(parsed.error()));
  auto set = set_claim_call(std::move(parsed->names), parsed->release.lease, call.owner);
  if (!set.ok()) return answer(reply, std::move(set).error());
  std::vector<std::string> sorted = set->sorted;
  const std::vector<std::uint64_t> tokens = set->claim.tokens;
  const std::string owner = set->claim.owner;
  engine_.release_set(std::move(set->sorted), std::move(set->claim),
                      [sorted = std::move(sorted), tokens, owner, usage = call.usage,
                       reply = std::move(reply)](EngineResult<bool> released) {
                        if (!released.ok()) return reply(claim_error(released.error(), owner));
                        if (usage) {  // released, or already gone
                          for (std::size_t i = 0; i < sorted.size(); ++i)
                            usage->drop(usage_key(sorted[i], tokens[i]));
                        }
                        reply(ok(json{{"names", sorted}, {"released", released.value()}}));
                      });
  return {};
}

}  // namespace fencelock::service
