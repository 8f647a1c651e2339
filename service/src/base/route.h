// The routes of API v1 as identifiers, shared by the router, the request log and the metrics.
// Everything else about a route is its row in ApiHandlers::routes() (router.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fencelock::service {

enum class Route : std::uint8_t {
  kAcquire,
  kExtend,
  kRelease,
  kLockStatus,
  kNextToken,
  kCurrentToken,
  kHealthz,
  kReadyz,
  kMetrics,
  kOpenApi,
  kAcquireSet,
  kExtendSet,
  kReleaseSet,
  kAcquirePermit,
  kExtendPermit,
  kReleasePermit,
  kSemaphoreStatus,
  kRevoke,
  kListLocks,
  kAcquireRw,
  kExtendRw,
  kReleaseRw,
  kRwLockStatus,
  kListSemaphores,
  kListRwLocks,
  kNotFound,  // anything else (404 and 405 are counted here); always last
};
inline constexpr std::size_t kRouteCount = static_cast<std::size_t>(Route::kNotFound) + 1;

// The route's label from its row ("acquire", "lock_status", ...); "not_found" for kNotFound.
std::string_view route_label(Route route) noexcept;

}  // namespace fencelock::service
