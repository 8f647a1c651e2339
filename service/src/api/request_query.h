// The queries of the GET routes that take one: each parameter optional unless said, at most once,
// its value percent-decoded; any other parameter is refused, named. Errors are ServiceErrors
// with a message for the client (a 400 invalid_request).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "base/service_result.h"
#include "fencelock/storage/lease.h"

namespace fencelock::service {

// A listing's query (GET /v1/locks, /v1/semaphores, /v1/rwlocks): "prefix=P&limit=N&cursor=C";
// limit defaults to 100.
ServiceResult<storage::ListRequest> parse_list_query(std::string_view query);

// A lock status's query (GET /v1/locks/{name}): "" (a plain status), or a watch,
// "after_token=T&wait_ms=N": T a token (0..2^64-1), N in ms (0..2^64-1, cut to `max_wait`), by
// default the smaller of kDefaultWatchWait and `max_wait`. wait_ms without after_token is refused.
struct WatchQuery {
  std::uint64_t after_token = 0;
  std::chrono::milliseconds wait{0};
};
inline constexpr std::chrono::milliseconds kDefaultWatchWait{30'000};
ServiceResult<std::optional<WatchQuery>> parse_status_query(std::string_view query,
                                                            std::chrono::milliseconds max_wait);

}  // namespace fencelock::service
