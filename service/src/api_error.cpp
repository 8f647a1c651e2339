#include "api_error.h"

namespace fencelock::service {

unsigned http_status(ApiError error) noexcept {
  switch (error) {
    case ApiError::kInvalidRequest: return 400;
    case ApiError::kNotFound: return 404;
    case ApiError::kMethodNotAllowed: return 405;
    case ApiError::kLocked: return 409;
    case ApiError::kNotHeld: return 409;
    case ApiError::kPayloadTooLarge: return 413;
    case ApiError::kInternal: return 500;
    case ApiError::kUnavailable: return 503;
    case ApiError::kClientGone: return 499;
  }
  return 500;
}

std::string_view wire_code(ApiError error) noexcept {
  switch (error) {
    case ApiError::kInvalidRequest: return "invalid_request";
    case ApiError::kNotFound: return "not_found";
    case ApiError::kMethodNotAllowed: return "method_not_allowed";
    case ApiError::kLocked: return "locked";
    case ApiError::kNotHeld: return "not_held";
    case ApiError::kPayloadTooLarge: return "payload_too_large";
    case ApiError::kInternal: return "internal";
    case ApiError::kUnavailable: return "unavailable";
    case ApiError::kClientGone: return "client_gone";
  }
  return "internal";
}

ApiError api_error_from(storage::ErrorCode code) noexcept {
  switch (code) {
    case storage::ErrorCode::kLocked: return ApiError::kLocked;
    case storage::ErrorCode::kUnavailable: return ApiError::kUnavailable;
    case storage::ErrorCode::kLeaseLost: return ApiError::kNotHeld;
    case storage::ErrorCode::kInvalidArgument: return ApiError::kInvalidRequest;
    case storage::ErrorCode::kInternal: return ApiError::kInternal;
    case storage::ErrorCode::kCancelled: return ApiError::kClientGone;
  }
  return ApiError::kInternal;
}

}  // namespace fencelock::service
