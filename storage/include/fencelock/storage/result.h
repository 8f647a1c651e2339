// Errors as values for the storage layer (the Redlock engine and the token sources).
//
// Every fallible storage call returns Result<T>: either a T or an Error. An expected outcome
// such as "someone else holds the lock" is an Error with code kLocked, not an exception; no
// exception crosses the storage API. Result is a plain value: copyable when T is, movable, not
// thread-safe (like any value).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "fencelock/basic_result.h"

namespace fencelock::storage {

enum class ErrorCode {
  kLocked,           // another lease holds the name: an ordinary outcome of acquire
  kUnavailable,      // fewer than a quorum of lock nodes (or the token source) answered in time
  kLeaseLost,        // extend/release: the lease no longer holds a quorum (expired or never held)
  kInvalidArgument,  // the caller passed a value outside the documented bounds
  kInternal,         // a broken invariant or an unexpected reply; always worth a log line
  kCancelled,        // acquire: the caller cancelled it (its client went away); nothing is held
  kPermitsMismatch,  // acquire_permit: the live semaphore has another permit count
};

// A stable, lower-case name for logs and metrics ("locked", "unavailable", ...).
std::string_view error_code_name(ErrorCode code) noexcept;

struct Error {
  ErrorCode code;
  std::string message;  // for people: what failed and, where known, why
  // kLocked only: how long after the error was made the name (every name of a set, a permit of
  // the semaphore) can first be granted again, as the refusing nodes' own answers tell — the
  // holder's remaining ttl on enough of them, plus the drift allowance. nullopt when they cannot
  // tell (a split vote between other acquires, too few answers, a node that did not say).
  // kUnavailable: when the first quarantined node votes again, if one is quarantined for a known
  // time. nullopt for every other code. A hint for when to try again, never a promise.
  std::optional<std::chrono::milliseconds> retry_after;
};

template <class T>
using Result = BasicResult<T, Error>;

// Result<void>: success carries nothing.
using fencelock::Done;
using Status = Result<Done>;

inline Error make_error(ErrorCode code, std::string message) {
  return Error{code, std::move(message), std::nullopt};
}

}  // namespace fencelock::storage
