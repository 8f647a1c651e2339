// API v1's error vocabulary on the wire: every error a client can see, its HTTP status and its
// stable code ({"error": {"code": "<code>", "message": ...}}). The one table both sides use:
// fencelockd words its answers with it, the SDK reads them back with it. Codes never change
// meaning; a new failure gets a new code (docs/api.md). Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string_view>

namespace fencelock {

enum class WireError {
  kInvalidRequest,      // 400: malformed JSON, a missing/wrong-typed/out-of-range field, a bad name
  kNotFound,            // 404: no such path
  kMethodNotAllowed,    // 405: known path, wrong method (the response carries an Allow header)
  kLocked,              // 409: acquire refused, someone else holds the lock
  kNotHeld,             // 409: extend with a lease that no longer holds the lock
  kUnauthenticated,     // 401: an API key is required, and none or an unknown one was sent
  kForbidden,           // 403: the key lacks the right or the name, or the lease is another key's
  kRateLimited,         // 429: the key is over its rate (the answer says when to retry)
  kQuotaExceeded,       // 429: the key holds max_locks, or max_waiters of its acquires wait
  kPayloadTooLarge,     // 413: body over the configured limit
  kInternal,            // 500: a surprise; always logged
  kUnavailable,         // 503: fewer than a majority of lock nodes, or the token source, answered
  kClientGone,          // 499 (logged only, never sent): the client closed its connection first
  kPlainHttpOnTlsPort,  // 400: a plain HTTP request on fencelockd's TLS port (use https://)
  kPermitsMismatch,     // 409: a semaphore asked with another permit count than the live one
  kUnsupportedMediaType,  // 415: a request body that is not sent as application/json
  kCrossSiteRequest,      // 403: a browser's cross-site request (Origin, Sec-Fetch-Site)
  kHostNotAllowed,        // 421: a Host header outside --allowed-hosts (DNS rebinding)
};

// The HTTP status for `error` (400, 404, ...).
unsigned http_status(WireError error) noexcept;

// The stable wire code for `error` ("invalid_request", "not_found", ...).
std::string_view wire_code(WireError error) noexcept;

// The error a wire code names; nullopt for a code this version does not know.
std::optional<WireError> wire_error_from_code(std::string_view code) noexcept;

}  // namespace fencelock
