#include "fencelock/result.h"

namespace fencelock {

std::string_view error_code_name(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kLocked:
      return "locked";
    case ErrorCode::kNotHeld:
      return "not_held";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kDenied:
      return "denied";
    case ErrorCode::kRateLimited:
      return "rate_limited";
    case ErrorCode::kTransport:
      return "transport";
    case ErrorCode::kTls:
      return "tls";
    case ErrorCode::kInternal:
      return "internal";
    case ErrorCode::kPermitsMismatch:
      return "permits_mismatch";
  }
  return "internal";
}

}  // namespace fencelock
