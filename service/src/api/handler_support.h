// What every API v1 handler file shares (api_handlers.cpp, set_handlers.cpp,
// semaphore_handlers.cpp): the success envelope, the 400 of a refused body or query, the
// refusals of the key's caps, how KeyUsage names a lease, and what an acquire holds while the
// engine works on it (engine errors become wire errors in api_error.h). Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/api_error.h"
#include "api/api_handlers.h"
#include "auth/key_usage.h"
#include "base/service_result.h"
#include "fencelock/basic_result.h"
#include "fencelock/storage/lease.h"

namespace fencelock::service::handler_support {

// A 200 with `body`; `token` goes to the request log.
ApiResponse ok(const nlohmann::json& body, std::optional<std::uint64_t> token = std::nullopt);

// A request the service refused before the engine saw it (its body or query): 400
// invalid_request with the error's message.
ApiResponse bad_request(const ServiceError& error);

// "read" or "write".
const char* mode_text(storage::RwMode mode);

// A semaphore's and a read/write lock's status as GET /v1/semaphores/{name} and GET
// /v1/rwlocks/{name} answer them (also the entries of their listings).
nlohmann::json semaphore_status_json(const std::string& name,
                                     const storage::SemaphoreStatus& status);
nlohmann::json rw_status_json(const std::string& name, const storage::RwLockStatus& status);

// 429 quota_exceeded with Retry-After: 1 s.
ApiResponse quota_error(const std::string& message);

// How KeyUsage names one held lock: its name and token (unique per grant, since every grant of a
// name draws a new token from that name's counter — a lock, a set's name or a permit).
std::string usage_key(const std::string& name, std::uint64_t token);

// What one acquire (of a lock, a lock set or a permit) holds until the engine answers it: if it
// waits, a waiter slot of its key's caps and one count of ApiHandlers::waiting_acquires(); and
// `locks` reserved lock slots of the caps (auth/key_usage.h; no caps: none). begin() takes them;
// exactly one call of granted() or refused() gives them back — the engine's handler makes it, or
// the handler's caller if the engine call threw (the handler then never runs). A plain value,
// copied into the handler (no allocation per acquire); callable from any thread.
class PendingAcquire {
 public:
  using Clock = std::chrono::steady_clock;

  // Takes the slots, or answers the 429 quota_exceeded to send instead (then nothing is taken).
  // `usage`: the key's caps, or null; `owner`: the key's id, for the message; `waiting`: the
  // count of waiting acquires, which must outlive every copy.
  static BasicResult<PendingAcquire, ApiResponse> begin(std::shared_ptr<KeyUsage> usage,
                                                        std::string_view owner, bool waits,
                                                        std::size_t locks,
                                                        std::atomic<std::size_t>& waiting);

  // Granted: the reserved slots become held locks usage_key(name, token) until `until`.
  void granted(const std::string& name, std::uint64_t token, Clock::time_point until) const;
  void granted(const std::vector<std::string>& names, const std::vector<std::uint64_t>& tokens,
               Clock::time_point until) const;
  // Refused, failed or cancelled: the reserved slots are given back.
  void refused() const;

 private:
  PendingAcquire(std::shared_ptr<KeyUsage> usage, std::atomic<std::size_t>* waiting,
                 std::size_t locks)
      : usage_(std::move(usage)), waiting_(waiting), locks_(locks) {}
  void end_wait() const;

  std::shared_ptr<KeyUsage> usage_;    // null: no caps
  std::atomic<std::size_t>* waiting_;  // null unless the acquire waits
  std::size_t locks_;
};

// Answers at once; for handlers that have nothing to cancel.
inline ApiHandlers::Cancel answer(ApiHandlers::Reply& reply, ApiResponse response) {
  reply(std::move(response));
  return {};
}

}  // namespace fencelock::service::handler_support
