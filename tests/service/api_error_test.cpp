#include "api/api_error.h"

#include <catch2/catch.hpp>

using namespace fencelock::service;
using fencelock::storage::ErrorCode;

TEST_CASE("every API error has its fixed status and wire code", "[service]") {
  const auto [error, status, code] = GENERATE(table<ApiError, unsigned, std::string>({
      {ApiError::kInvalidRequest, 400, "invalid_request"},
      {ApiError::kNotFound, 404, "not_found"},
      {ApiError::kMethodNotAllowed, 405, "method_not_allowed"},
      {ApiError::kLocked, 409, "locked"},
      {ApiError::kNotHeld, 409, "not_held"},
      {ApiError::kPayloadTooLarge, 413, "payload_too_large"},
      {ApiError::kInternal, 500, "internal"},
      {ApiError::kUnavailable, 503, "unavailable"},
      {ApiError::kClientGone, 499, "client_gone"},
      {ApiError::kPlainHttpOnTlsPort, 400, "plain_http_on_tls_port"},
      {ApiError::kPermitsMismatch, 409, "permits_mismatch"},
      {ApiError::kUnsupportedMediaType, 415, "unsupported_media_type"},
      {ApiError::kCrossSiteRequest, 403, "cross_site_request"},
      {ApiError::kHostNotAllowed, 421, "host_not_allowed"},
  }));
  CHECK(http_status(error) == status);
  CHECK(wire_code(error) == code);
  CHECK(fencelock::wire_error_from_code(code) == error);  // the SDK reads it back the same way
}

TEST_CASE("a wire code this version does not know is not an error it knows", "[service]") {
  CHECK_FALSE(fencelock::wire_error_from_code("teapot").has_value());
  CHECK_FALSE(fencelock::wire_error_from_code("").has_value());
}

TEST_CASE("storage errors map onto API errors", "[service]") {
  const auto [storage_code, api] = GENERATE(table<ErrorCode, ApiError>({
      {ErrorCode::kLocked, ApiError::kLocked},
      {ErrorCode::kUnavailable, ApiError::kUnavailable},
      {ErrorCode::kLeaseLost, ApiError::kNotHeld},
      {ErrorCode::kInvalidArgument, ApiError::kInvalidRequest},
      {ErrorCode::kInternal, ApiError::kInternal},
      {ErrorCode::kCancelled, ApiError::kClientGone},
      {ErrorCode::kPermitsMismatch, ApiError::kPermitsMismatch},
  }));
  CHECK(api_error_from(storage_code) == api);
}
