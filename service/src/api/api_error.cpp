#include "api/api_error.h"

#include <cstdint>
#include <optional>
#include <utility>

namespace fencelock::service {

ApiError api_error_from(storage::ErrorCode code) noexcept {
  switch (code) {
    case storage::ErrorCode::kLocked:
      return ApiError::kLocked;
    case storage::ErrorCode::kUnavailable:
      return ApiError::kUnavailable;
    case storage::ErrorCode::kLeaseLost:
      return ApiError::kNotHeld;
    case storage::ErrorCode::kInvalidArgument:
      return ApiError::kInvalidRequest;
    case storage::ErrorCode::kInternal:
      return ApiError::kInternal;
    case storage::ErrorCode::kCancelled:
      return ApiError::kClientGone;
    case storage::ErrorCode::kPermitsMismatch:
      return ApiError::kPermitsMismatch;
  }
  return ApiError::kInternal;
}

ApiResponse from_storage_error(const EngineError& error) {
  std::optional<std::int64_t> retry_after_ms;
  if ((error.code == storage::ErrorCode::kLocked ||
       error.code == storage::ErrorCode::kUnavailable) &&
      error.retry_after)
    retry_after_ms = error.retry_after->count();
  return RequestHandler::error_response(api_error_from(error.code), error.message, retry_after_ms);
}

ApiResponse claim_error(const EngineError& error, std::string_view owner) {
  if (!owner.empty() && error.code == storage::ErrorCode::kInvalidArgument)
    return RequestHandler::error_response(ApiError::kForbidden, error.message);
  return from_storage_error(error);
}

bool permits_mismatch(const EngineError& error) noexcept {
  return error.code == storage::ErrorCode::kPermitsMismatch;
}

EngineError engine_unavailable(std::string message) {
  return storage::make_error(storage::ErrorCode::kUnavailable, std::move(message));
}

}  // namespace fencelock::service
