#include "fencelock/wire_error.h"

#include <array>

namespace fencelock {

namespace {

struct Entry {
  WireError error;
  unsigned status;
  std::string_view code;
};

constexpr std::array<Entry, 18> kTable{{
    {WireError::kInvalidRequest, 400, "invalid_request"},
    {WireError::kNotFound, 404, "not_found"},
    {WireError::kMethodNotAllowed, 405, "method_not_allowed"},
    {WireError::kLocked, 409, "locked"},
    {WireError::kNotHeld, 409, "not_held"},
    {WireError::kUnauthenticated, 401, "unauthenticated"},
    {WireError::kForbidden, 403, "forbidden"},
    {WireError::kRateLimited, 429, "rate_limited"},
    {WireError::kQuotaExceeded, 429, "quota_exceeded"},
    {WireError::kPayloadTooLarge, 413, "payload_too_large"},
    {WireError::kInternal, 500, "internal"},
    {WireError::kUnavailable, 503, "unavailable"},
    {WireError::kClientGone, 499, "client_gone"},
    {WireError::kPlainHttpOnTlsPort, 400, "plain_http_on_tls_port"},
    {WireError::kPermitsMismatch, 409, "permits_mismatch"},
    {WireError::kUnsupportedMediaType, 415, "unsupported_media_type"},
    {WireError::kCrossSiteRequest, 403, "cross_site_request"},
    {WireError::kHostNotAllowed, 421, "host_not_allowed"},
}};

const Entry& entry_of(WireError error) noexcept {
  for (const Entry& entry : kTable) {
    if (entry.error == error) return entry;
  }
  return kTable[10];  // internal
}

}  // namespace

unsigned http_status(WireError error) noexcept {
  return entry_of(error).status;
}

std::string_view wire_code(WireError error) noexcept {
  return entry_of(error).code;
}

std::optional<WireError> wire_error_from_code(std::string_view code) noexcept {
  for (const Entry& entry : kTable) {
    if (entry.code == code) return entry.error;
  }
  return std::nullopt;
}

}  // namespace fencelock
