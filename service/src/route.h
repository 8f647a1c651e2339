// The routes of API v1 as fixed labels, shared by the router, the request log and the metrics.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fencelock::service {

enum class Route : std::uint8_t {
  kAcquire,          // POST   /v1/locks/{name}
  kExtend,           // POST   /v1/locks/{name}/extend
  kRelease,          // DELETE /v1/locks/{name}
  kLockStatus,       // GET    /v1/locks/{name}
  kNextToken,        // POST   /v1/tokens/{name}
  kCurrentToken,     // GET    /v1/tokens/{name}
  kHealthz,          // GET    /healthz
  kReadyz,           // GET    /readyz
  kMetrics,          // GET    /metrics
  kOpenApi,          // GET    /v1/openapi.json
  kAcquireSet,       // POST   /v1/locks           (a lock set: the names are in the body)
  kExtendSet,        // POST   /v1/locks:extend
  kReleaseSet,       // DELETE /v1/locks
  kAcquirePermit,    // POST   /v1/semaphores/{name}
  kExtendPermit,     // POST   /v1/semaphores/{name}/extend
  kReleasePermit,    // DELETE /v1/semaphores/{name}
  kSemaphoreStatus,  // GET    /v1/semaphores/{name}
  kNotFound,         // anything else (404 and 405 are counted here)
};
inline constexpr std::size_t kRouteCount = 18;

// "acquire", "extend", "release", "lock_status", "next_token", "current_token", "healthz",
// "readyz", "metrics", "openapi", "acquire_set", "extend_set", "release_set", "acquire_permit",
// "extend_permit", "release_permit", "semaphore_status", "not_found".
std::string_view route_label(Route route) noexcept;

}  // namespace fencelock::service
