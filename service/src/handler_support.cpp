#include "handler_support.h"

namespace fencelock::service::handler_support {

ApiResponse ok(const nlohmann::json& body, std::optional<std::uint64_t> token) {
  ApiResponse response;
  response.body = body.dump();
  response.log.token = token;
  return response;
}

ApiResponse from_storage_error(const storage::Error& error) {
  return ApiHandlers::error_response(api_error_from(error.code), error.message);
}

ApiResponse claim_error(const storage::Error& error, std::string_view owner) {
  if (!owner.empty() && error.code == storage::ErrorCode::kInvalidArgument)
    return ApiHandlers::error_response(ApiError::kForbidden, error.message);
  return from_storage_error(error);
}

ApiResponse quota_error(const std::string& message) {
  ApiResponse response = ApiHandlers::error_response(ApiError::kQuotaExceeded, message, 1000);
  response.retry_after_s = 1;
  return response;
}

std::string usage_key(const std::string& name, std::uint64_t token) {
  return name + "#" + std::to_string(token);
}

}  // namespace fencelock::service::handler_support
