// What every API v1 handler file shares (api_handlers.cpp, set_handlers.cpp,
// semaphore_handlers.cpp): the success and error envelopes, the refusals of the key's caps, and
// how KeyUsage names a lease. Pure helpers; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "api_handlers.h"
#include "fencelock/storage/result.h"

namespace fencelock::service::handler_support {

// A 200 with `body`; `token` goes to the request log.
ApiResponse ok(const nlohmann::json& body, std::optional<std::uint64_t> token = std::nullopt);

// The engine's error as the wire error of api_error.h, with its message.
ApiResponse from_storage_error(const storage::Error& error);

// A claim refused as not the lease's own, by a caller with a key (`owner` not empty): the lease
// may be another key's (its proof is bound to the key id, lease_secret.h), which is a 403, not a
// malformed request. Any other error as from_storage_error().
ApiResponse claim_error(const storage::Error& error, std::string_view owner);

// 429 quota_exceeded with Retry-After: 1 s.
ApiResponse quota_error(const std::string& message);

// How KeyUsage names one held lock: its name and token (unique per grant, since every grant of a
// name draws a new token from that name's counter — a lock, a set's name or a permit).
std::string usage_key(const std::string& name, std::uint64_t token);

// Answers at once; for handlers that have nothing to cancel.
inline ApiHandlers::Cancel answer(ApiHandlers::Reply& reply, ApiResponse response) {
  reply(std::move(response));
  return {};
}

}  // namespace fencelock::service::handler_support
