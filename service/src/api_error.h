// The API's error vocabulary: every error a client can see, its HTTP status and its stable code.
//
// This file is the one place where internal errors become wire errors. Codes are part of API v1
// (docs/api.md) and never change meaning; a new failure gets a new code.
#pragma once

#include <string_view>

#include "fencelock/storage/result.h"

namespace fencelock::service {

enum class ApiError {
  kInvalidRequest,    // 400: malformed JSON, a missing/wrong-typed/out-of-range field, a bad name
  kNotFound,          // 404: no such path
  kMethodNotAllowed,  // 405: known path, wrong method (the response carries an Allow header)
  kLocked,            // 409: acquire refused, someone else holds the lock
  kNotHeld,           // 409: extend with a lease that no longer holds the lock
  kPayloadTooLarge,   // 413: body over the configured limit
  kInternal,          // 500: a surprise; always logged
  kUnavailable,       // 503: fewer than a majority of lock nodes, or the token source, answered
  kClientGone,        // 499 (logged only, never sent): the client closed its connection first
};

// The HTTP status for `error` (400, 404, ...).
unsigned http_status(ApiError error) noexcept;

// The stable wire code for `error` ("invalid_request", "not_found", ...).
std::string_view wire_code(ApiError error) noexcept;

// How a storage-layer error surfaces on the wire.
ApiError api_error_from(storage::ErrorCode code) noexcept;

}  // namespace fencelock::service
