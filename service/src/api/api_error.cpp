#include "api/api_error.h"

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

}  // namespace fencelock::service
