// Where the engine's errors become wire errors: the one place. The wire vocabulary itself (codes,
// statuses) is fencelock/wire_error.h, shared with the SDK that reads it back.
#pragma once

#include "fencelock/storage/result.h"
#include "fencelock/wire_error.h"

namespace fencelock::service {

using ApiError = fencelock::WireError;
using fencelock::http_status;
using fencelock::wire_code;

// How a storage-layer error surfaces on the wire.
ApiError api_error_from(storage::ErrorCode code) noexcept;

}  // namespace fencelock::service
