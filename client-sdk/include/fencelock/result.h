// Errors as values for the fencelock C++ SDK.
//
// Every fallible SDK call returns Result<T>: a T or an Error. The codes keep apart what callers
// handle differently: kLocked (someone else holds it: wait or give up), kNotHeld (your lease is
// gone: stop writing), kUnavailable (the service or its lock nodes cannot decide now: retry
// later), kInvalidArgument (fix the call), kTransport (no answer from the service at all), kTls
// (the TLS handshake failed: fix the certificates, retrying will not help), kPermitsMismatch (the
// semaphore is live with another permit count: ask with that count, or wait until it is free).
// No exception crosses the SDK's API. A Result is a plain value, not thread-safe.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "fencelock/basic_result.h"

namespace fencelock {

enum class ErrorCode {
  kLocked,           // 409 locked: another lease holds the lock
  kNotHeld,          // 409 not_held: the lease no longer holds the lock
  kUnavailable,      // 503 unavailable: too few lock nodes, or the token source, answered
  kInvalidArgument,  // 400/413 from the service, or refused by the SDK before sending
  kDenied,           // 401/403: no API key, an unknown one, or one without the right or name
  kRateLimited,      // 429 rate_limited / quota_exceeded: the API key is over its rate or caps
  kTransport,        // no usable answer: connect failed, timed out, connection broke
  kTls,              // TLS failed: the server's certificate is not trusted (ca_file) or not for
                     // this host, or the server refused the protocol or our client certificate
  kInternal,         // 500, or an answer the SDK cannot read
  kPermitsMismatch,  // 409 permits_mismatch: acquire_permit with another permit count than the
                     // live semaphore's (the message names the live count)
};

// "locked", "not_held", "unavailable", "invalid_argument", "denied", "rate_limited", "transport",
// "tls", "internal", "permits_mismatch".
std::string_view error_code_name(ErrorCode code) noexcept;

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  unsigned http_status = 0;                              // 0 when no HTTP answer was received
  std::optional<std::chrono::milliseconds> retry_after;  // kLocked: when the holder's lease ends
};

template <class T>
using Result = BasicResult<T, Error>;
using Status = Result<Done>;

}  // namespace fencelock
