// The handlers of lock sets (POST /v1/locks, POST /v1/locks:extend, DELETE /v1/locks): parse →
// validate → call the engine's set operations → map errors, as the single-lock handlers do.
//
// The engine sorts the names; answers list them in that canonical order, and the lease carries
// one token per name in the same order. A client may send the names of an extend or release in
// any order: they are sorted here before the lease's tokens are paired with them. A key's
// max_locks counts a set as one lock per name; each name is tracked as "<name>#<token>".
#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "api_handlers.h"
#include "handler_support.h"
#include "lease_codec.h"

namespace fencelock::service {

namespace {

using nlohmann::json;
using storage::Result;
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

}  // namespace

ApiHandlers::Cancel ApiHandlers::acquire_set(const Call& call, Reply reply) {
  auto parsed = parse_set_acquire_body(call.body, limits_);
  if (!parsed.ok()) return answer(reply, from_storage_error(parsed.error()));
  const std::string owner_detail = parsed->acquire.owner;
  const bool waits = parsed->acquire.wait.count() > 0;
  const std::string owner(call.owner);
  const std::size_t name_count = parsed->names.size();
  std::shared_ptr<KeyUsage> usage = call.usage;
  if (usage) {
    if (waits && !usage->begin_wait()) {
      return answer(reply,
                    quota_error("key '" + owner + "' has " + std::to_string(*usage->max_waiters()) +
                                " acquires waiting already (max_waiters)"));
    }
    if (!usage->reserve_lock(std::chrono::steady_clock::now(), name_count)) {
      if (waits) usage->end_wait();
      return answer(
          reply, quota_error("key '" + owner + "' may hold " + std::to_string(*usage->max_locks()) +
                             " locks through this fencelockd; a set of " +
                             std::to_string(name_count) + " names would pass that (max_locks)"));
    }
  }
  std::vector<std::string> names = parsed->names;
  storage::LockSetRequest request{std::move(parsed->names), parsed->acquire.ttl,
                                  parsed->acquire.wait, owner};
  if (waits) waiting_acquires_.fetch_add(1, std::memory_order_relaxed);
  struct Unwaiting {
    std::atomic<std::size_t>* count;
    ~Unwaiting() {
      if (count != nullptr) count->fetch_sub(1, std::memory_order_relaxed);
    }
  } unwaiting{waits ? &waiting_acquires_ : nullptr};
  const storage::AcquireTicket ticket = engine_.acquire_set(
      std::move(request),
      [this, names = std::move(names), owner, owner_detail, usage, waits, name_count,
       reply = std::move(reply)](Result<storage::LockSetLease> lease) mutable {
        if (waits) waiting_acquires_.fetch_sub(1, std::memory_order_relaxed);
        if (usage) {
          if (waits) usage->end_wait();
          if (lease.ok()) {
            for (std::size_t i = 0; i < lease->names.size(); ++i)
              usage->hold(usage_key(lease->names[i], lease->tokens[i]),
                          lease->started + lease->ttl);
          } else {
            usage->cancel_reservation(name_count);
          }
        }
        if (lease.ok()) {
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
            engine_.release_set(sorted, claim, [](const Result<bool>&) {});
          };
          return reply(std::move(response));
        }
        if (lease.error().code != storage::ErrorCode::kLocked)
          return reply(from_storage_error(lease.error()));
        answer_set_locked(std::move(names), lease.error().message, std::move(reply));
      });
  unwaiting.count = nullptr;  // the callback gives it back
  if (!waits) return {};
  return [ticket] { ticket.cancel(); };
}

void ApiHandlers::answer_set_locked(std::vector<std::string> names, std::string message,
                                    Reply reply) {
  // The set is free once every name held now is: the latest expiry among them is when it is worth
  // trying again (unknown if any inspect fails).
  struct Join {
    std::mutex mutex;
    std::size_t left = 0;
    bool known = true;
    std::optional<std::chrono::milliseconds> latest;
    std::string message;
    Reply reply;
  };
  auto join = std::make_shared<Join>();
  join->left = names.size();
  join->message = std::move(message);
  join->reply = std::move(reply);
  for (std::string& name : names) {
    engine_.inspect(std::move(name), [join](Result<storage::LockStatus> status) {
      std::unique_lock<std::mutex> lock(join->mutex);
      if (!status.ok()) {
        join->known = false;
      } else if (status->held) {
        if (!status->remaining) {
          join->known = false;
        } else if (!join->latest || *join->latest < *status->remaining) {
          join->latest = status->remaining;
        }
      }
      if (--join->left != 0) return;
      std::optional<std::int64_t> retry_after;
      if (join->known && join->latest) retry_after = join->latest->count();
      lock.unlock();
      join->reply(error_response(ApiError::kLocked, join->message, retry_after));
    });
  }
}

ApiHandlers::Cancel ApiHandlers::extend_set(const Call& call, Reply reply) {
  auto parsed = parse_set_extend_body(call.body, limits_);
  if (!parsed.ok()) return answer(reply, from_storage_error(parsed.error()));
  auto claim = decode_set_lease(parsed->extend.lease, parsed->names.size());
  if (!claim) {
    return answer(reply, error_response(ApiError::kInvalidRequest,
                                        "lease is malformed, or its tokens do not match the " +
                                            std::to_string(parsed->names.size()) + " names"));
  }
  claim->owner = std::string(call.owner);
  std::vector<std::string> sorted = parsed->names;
  std::sort(sorted.begin(), sorted.end());
  // The answer's tokens come from what the nodes verified, never from the request alone.
  engine_.extend_set(
      sorted, *claim, parsed->extend.ttl,
      [sorted, proof = claim->proof, owner = claim->owner, usage = call.usage,
       reply = std::move(reply)](Result<storage::LockSetExtension> extension) {
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
  if (!parsed.ok()) return answer(reply, from_storage_error(parsed.error()));
  auto claim = decode_set_lease(parsed->release.lease, parsed->names.size());
  if (!claim) {
    return answer(reply, error_response(ApiError::kInvalidRequest,
                                        "lease is malformed, or its tokens do not match the " +
                                            std::to_string(parsed->names.size()) + " names"));
  }
  claim->owner = std::string(call.owner);
  std::vector<std::string> sorted = parsed->names;
  std::sort(sorted.begin(), sorted.end());
  const std::vector<std::uint64_t> tokens = claim->tokens;
  const std::string owner = claim->owner;
  engine_.release_set(
      sorted, std::move(*claim),
      [sorted, tokens, owner, usage = call.usage, reply = std::move(reply)](Result<bool> released) {
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
