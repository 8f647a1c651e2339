// The paths of API v1 (docs/api.md), written once: fencelockd's route table matches requests
// against them and the C++ SDK builds its requests from them. A "{name}" segment stands for a lock,
// semaphore or counter name (fencelock/names.h), whose alphabet needs no escaping in a path.
#pragma once

#include <string>
#include <string_view>

namespace fencelock::api_paths {

inline constexpr std::string_view kLock = "/v1/locks/{name}";
inline constexpr std::string_view kLockExtend = "/v1/locks/{name}/extend";
inline constexpr std::string_view kLockRevoke = "/v1/locks/{name}/revoke";
inline constexpr std::string_view kLockSet = "/v1/locks";
inline constexpr std::string_view kLockSetExtend = "/v1/locks:extend";
inline constexpr std::string_view kSemaphore = "/v1/semaphores/{name}";
inline constexpr std::string_view kSemaphoreExtend = "/v1/semaphores/{name}/extend";
inline constexpr std::string_view kSemaphoreList = "/v1/semaphores";
inline constexpr std::string_view kRwLock = "/v1/rwlocks/{name}";
inline constexpr std::string_view kRwLockExtend = "/v1/rwlocks/{name}/extend";
inline constexpr std::string_view kRwLockList = "/v1/rwlocks";
inline constexpr std::string_view kToken = "/v1/tokens/{name}";
inline constexpr std::string_view kHealthz = "/healthz";
inline constexpr std::string_view kReadyz = "/readyz";
inline constexpr std::string_view kMetrics = "/metrics";
inline constexpr std::string_view kOpenApi = "/v1/openapi.json";

// `pattern` with its "{name}" replaced by `name` (a pattern without one is returned as it is).
std::string expand(std::string_view pattern, std::string_view name);

}  // namespace fencelock::api_paths
