// Where the engine's and the token source's errors become wire errors: the one place. The handlers
// receive them as EngineResult<T> and hand an error here; nothing else in the service reads
// storage::Error. The wire vocabulary itself (codes, statuses) is fencelock/wire_error.h, shared
// with the SDK that reads it back.
#pragma once

#include <string>
#include <string_view>

#include "fencelock/storage/result.h"
#include "fencelock/wire_error.h"
#include "http/exchange.h"

namespace fencelock::service {

using ApiError = fencelock::WireError;
using fencelock::http_status;
using fencelock::wire_code;

// What an engine or token source call answers, as a handler receives it.
template <class T>
using EngineResult = storage::Result<T>;
using EngineError = storage::Error;

// How a storage-layer error code surfaces on the wire.
ApiError api_error_from(storage::ErrorCode code) noexcept;

// The engine's error as its wire error, with its message; a kLocked or kUnavailable error that
// carries retry_after (storage/result.h) adds it as retry_after_ms.
ApiResponse from_storage_error(const EngineError& error);

// A claim refused as not the lease's own, by a caller with a key (`owner` not empty): the lease
// may be another key's (its proof is bound to the key id, lease_secret.h), which is a 403, not a
// malformed request. Any other error as from_storage_error().
ApiResponse claim_error(const EngineError& error, std::string_view owner);

// Whether a permit was refused because the semaphore lives with another permit count.
bool permits_mismatch(const EngineError& error) noexcept;

// An answer the service turns into "unavailable" itself (a token it may not hand out).
EngineError engine_unavailable(std::string message);

}  // namespace fencelock::service
