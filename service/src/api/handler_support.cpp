#include "api/handler_support.h"

namespace fencelock::service::handler_support {

ApiResponse ok(const nlohmann::json& body, std::optional<std::uint64_t> token) {
  ApiResponse response;
  // Text from a lock node (an owner) is not trusted to be UTF-8: replaced, never thrown on.
  response.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  response.log.token = token;
  return response;
}

ApiResponse bad_request(const ServiceError& error) {
  return ApiHandlers::error_response(ApiError::kInvalidRequest, error.message);
}

ApiResponse quota_error(const std::string& message) {
  ApiResponse response = ApiHandlers::error_response(ApiError::kQuotaExceeded, message, 1000);
  response.retry_after_s = 1;
  return response;
}

std::string usage_key(const std::string& name, std::uint64_t token) {
  return name + "#" + std::to_string(token);
}

BasicResult<PendingAcquire, ApiResponse> PendingAcquire::begin(std::shared_ptr<KeyUsage> usage,
                                                               std::string_view owner, bool waits,
                                                               std::size_t locks,
                                                               std::atomic<std::size_t>& waiting) {
  if (usage) {
    const std::string key(owner);
    if (waits && !usage->begin_wait()) {
      return quota_error("key '" + key + "' has " + std::to_string(*usage->max_waiters()) +
                         " acquires waiting already (max_waiters)");
    }
    if (!usage->reserve_lock(Clock::now(), locks)) {
      if (waits) usage->end_wait();
      if (locks == 1) {
        return quota_error("key '" + key + "' holds " + std::to_string(*usage->max_locks()) +
                           " locks through this fencelockd already (max_locks)");
      }
      return quota_error("key '" + key + "' may hold " + std::to_string(*usage->max_locks()) +
                         " locks through this fencelockd; a set of " + std::to_string(locks) +
                         " names would pass that (max_locks)");
    }
  }
  if (waits) waiting.fetch_add(1, std::memory_order_relaxed);
  return PendingAcquire(std::move(usage), waits ? &waiting : nullptr, locks);
}

void PendingAcquire::end_wait() const {
  if (waiting_ == nullptr) return;
  waiting_->fetch_sub(1, std::memory_order_relaxed);
  if (usage_) usage_->end_wait();
}

void PendingAcquire::granted(const std::string& name, std::uint64_t token,
                             Clock::time_point until) const {
  end_wait();
  if (usage_) usage_->hold(usage_key(name, token), until);
}

void PendingAcquire::granted(const std::vector<std::string>& names,
                             const std::vector<std::uint64_t>& tokens,
                             Clock::time_point until) const {
  end_wait();
  if (!usage_) return;
  for (std::size_t i = 0; i < names.size() && i < tokens.size(); ++i)
    usage_->hold(usage_key(names[i], tokens[i]), until);
}

void PendingAcquire::refused() const {
  end_wait();
  if (usage_) usage_->cancel_reservation(locks_);
}

const char* mode_text(storage::RwMode mode) {
  return mode == storage::RwMode::kWrite ? "write" : "read";
}

nlohmann::json semaphore_status_json(const std::string& name,
                                     const storage::SemaphoreStatus& status) {
  return nlohmann::json{{"name", name}, {"permits", status.permits}, {"held", status.held}};
}

nlohmann::json rw_status_json(const std::string& name, const storage::RwLockStatus& status) {
  using nlohmann::json;
  json holders = json::array();
  for (const auto& grant : status.grants) {
    holders.push_back(json{{"token", grant.token},
                           {"owner", grant.holder.empty() ? json(nullptr) : json(grant.holder)},
                           {"remaining_ms", grant.remaining.count()}});
  }
  // A write grant, if any (a quorum holds one only while no read is held), else reads or none.
  json mode = nullptr;
  for (const auto& grant : status.grants) {
    if (mode.is_null() || grant.mode == storage::RwMode::kWrite) mode = mode_text(grant.mode);
  }
  return json{{"name", name},
              {"mode", mode},
              {"holders", std::move(holders)},
              {"writer_waiting", status.writer_waiting}};
}

}  // namespace fencelock::service::handler_support
