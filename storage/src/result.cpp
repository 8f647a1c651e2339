#include "fencelock/storage/result.h"

namespace fencelock::storage {

std::string_view error_code_name(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kLocked:
      return "locked";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kLeaseLost:
      return "lease_lost";
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kInternal:
      return "internal";
    case ErrorCode::kCancelled:
      return "cancelled";
    case ErrorCode::kPermitsMismatch:
      return "permits_mismatch";
  }
  return "internal";
}

}  // namespace fencelock::storage
