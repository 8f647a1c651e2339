#include "request_body.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "fencelock/names.h"

namespace fencelock::service {

namespace {

using nlohmann::json;
using storage::ErrorCode;
using storage::make_error;
using storage::Result;

Result<json> parse_object(std::string_view body) {
  json parsed = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded())
    return make_error(ErrorCode::kInvalidArgument, "the body is not valid JSON");
  if (!parsed.is_object())
    return make_error(ErrorCode::kInvalidArgument, "the body must be a JSON object");
  return parsed;
}

// An integer field in [low, high]. JSON floats (even 10.0), strings and booleans are refused.
Result<std::optional<std::int64_t>> integer_field(const json& object, const char* name,
                                                  std::int64_t low, std::int64_t high,
                                                  bool required) {
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) {
    if (required)
      return make_error(ErrorCode::kInvalidArgument, std::string(name) + " is required");
    return std::optional<std::int64_t>();
  }
  const std::string range =
      " must be an integer between " + std::to_string(low) + " and " + std::to_string(high);
  if (!it->is_number_integer())
    return make_error(ErrorCode::kInvalidArgument, std::string(name) + range);
  std::int64_t value = 0;
  if (it->is_number_unsigned()) {
    const auto raw = it->get<std::uint64_t>();
    if (raw > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return make_error(ErrorCode::kInvalidArgument, std::string(name) + range);
    }
    value = static_cast<std::int64_t>(raw);
  } else {
    value = it->get<std::int64_t>();
  }
  if (value < low || value > high)
    return make_error(ErrorCode::kInvalidArgument, std::string(name) + range);
  return std::optional<std::int64_t>(value);
}

Result<std::optional<std::string>> string_field(const json& object, const char* name,
                                                std::size_t max_length, bool required) {
  const auto it = object.find(name);
  if (it == object.end() || it->is_null()) {
    if (required)
      return make_error(ErrorCode::kInvalidArgument, std::string(name) + " is required");
    return std::optional<std::string>();
  }
  if (!it->is_string())
    return make_error(ErrorCode::kInvalidArgument, std::string(name) + " must be a string");
  const auto& text = it->get_ref<const std::string&>();
  if (text.size() > max_length) {
    return make_error(ErrorCode::kInvalidArgument, std::string(name) + " must be at most " +
                                                       std::to_string(max_length) + " characters");
  }
  return std::optional<std::string>(text);
}

Result<std::chrono::milliseconds> ttl_field(const json& object, const BodyLimits& limits) {
  auto ttl = integer_field(object, "ttl_ms", limits.min_ttl.count(), limits.max_ttl.count(), true);
  if (!ttl.ok()) return std::move(ttl).error();
  return std::chrono::milliseconds(*ttl.value());
}

Result<std::vector<std::string>> names_field(const json& object) {
  const auto it = object.find("names");
  if (it == object.end() || it->is_null())
    return make_error(ErrorCode::kInvalidArgument, "names is required");
  if (!it->is_array())
    return make_error(ErrorCode::kInvalidArgument, "names must be an array of lock names");
  if (it->empty())
    return make_error(ErrorCode::kInvalidArgument, "names must hold at least one name");
  if (it->size() > storage::kMaxLockSetNames) {
    return make_error(
        ErrorCode::kInvalidArgument,
        "names must hold at most " + std::to_string(storage::kMaxLockSetNames) + " names");
  }
  std::vector<std::string> names;
  names.reserve(it->size());
  for (const json& entry : *it) {
    if (!entry.is_string())
      return make_error(ErrorCode::kInvalidArgument, "names must hold only strings");
    const auto& name = entry.get_ref<const std::string&>();
    if (!fencelock::is_valid_lock_name(name)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "names: every " + std::string(fencelock::kLockNameRule));
    }
    if (std::find(names.begin(), names.end(), name) != names.end())
      return make_error(ErrorCode::kInvalidArgument, "names holds '" + name + "' twice");
    names.push_back(name);
  }
  return names;
}

Result<AcquireBody> acquire_fields(const json& object, const BodyLimits& limits) {
  auto ttl = ttl_field(object, limits);
  if (!ttl.ok()) return std::move(ttl).error();
  auto wait = integer_field(object, "wait_ms", 0, limits.max_wait.count(), false);
  if (!wait.ok()) return std::move(wait).error();
  auto owner = string_field(object, "owner", kMaxOwnerLength, false);
  if (!owner.ok()) return std::move(owner).error();
  return AcquireBody{ttl.value(), std::chrono::milliseconds(wait.value().value_or(0)),
                     owner.value().value_or(std::string())};
}

Result<ExtendBody> extend_fields(const json& object, const BodyLimits& limits,
                                 std::size_t max_lease) {
  auto lease = string_field(object, "lease", max_lease, true);
  if (!lease.ok()) return std::move(lease).error();
  auto ttl = ttl_field(object, limits);
  if (!ttl.ok()) return std::move(ttl).error();
  return ExtendBody{std::move(*lease.value()), ttl.value()};
}

Result<ReleaseBody> release_fields(const json& object, std::size_t max_lease) {
  auto lease = string_field(object, "lease", max_lease, true);
  if (!lease.ok()) return std::move(lease).error();
  return ReleaseBody{std::move(*lease.value())};
}

}  // namespace

Result<std::vector<std::string>> parse_set_names(std::string_view body) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  return names_field(object.value());
}

Result<SetAcquireBody> parse_set_acquire_body(std::string_view body, const BodyLimits& limits) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  auto names = names_field(object.value());
  if (!names.ok()) return std::move(names).error();
  auto acquire = acquire_fields(object.value(), limits);
  if (!acquire.ok()) return std::move(acquire).error();
  return SetAcquireBody{std::move(names).value(), std::move(acquire).value()};
}

Result<SetExtendBody> parse_set_extend_body(std::string_view body, const BodyLimits& limits) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  auto names = names_field(object.value());
  if (!names.ok()) return std::move(names).error();
  auto extend = extend_fields(object.value(), limits, kMaxSetLeaseLength);
  if (!extend.ok()) return std::move(extend).error();
  return SetExtendBody{std::move(names).value(), std::move(extend).value()};
}

Result<SetReleaseBody> parse_set_release_body(std::string_view body) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  auto names = names_field(object.value());
  if (!names.ok()) return std::move(names).error();
  auto release = release_fields(object.value(), kMaxSetLeaseLength);
  if (!release.ok()) return std::move(release).error();
  return SetReleaseBody{std::move(names).value(), std::move(release).value()};
}

Result<PermitAcquireBody> parse_permit_acquire_body(std::string_view body,
                                                    const BodyLimits& limits) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  auto permits = integer_field(object.value(), "permits", 1, storage::kMaxPermits, true);
  if (!permits.ok()) return std::move(permits).error();
  auto acquire = acquire_fields(object.value(), limits);
  if (!acquire.ok()) return std::move(acquire).error();
  return PermitAcquireBody{static_cast<std::uint32_t>(*permits.value()),
                           std::move(acquire).value()};
}

Result<ExtendBody> parse_permit_extend_body(std::string_view body, const BodyLimits& limits) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  return extend_fields(object.value(), limits, kMaxPermitLeaseLength);
}

Result<ReleaseBody> parse_permit_release_body(std::string_view body) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  return release_fields(object.value(), kMaxPermitLeaseLength);
}

Result<AcquireBody> parse_acquire_body(std::string_view body, const BodyLimits& limits) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  auto ttl = ttl_field(object.value(), limits);
  if (!ttl.ok()) return std::move(ttl).error();
  auto wait = integer_field(object.value(), "wait_ms", 0, limits.max_wait.count(), false);
  if (!wait.ok()) return std::move(wait).error();
  auto owner = string_field(object.value(), "owner", kMaxOwnerLength, false);
  if (!owner.ok()) return std::move(owner).error();
  return AcquireBody{ttl.value(), std::chrono::milliseconds(wait.value().value_or(0)),
                     owner.value().value_or(std::string())};
}

Result<ExtendBody> parse_extend_body(std::string_view body, const BodyLimits& limits) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  auto lease = string_field(object.value(), "lease", kMaxLeaseLength, true);
  if (!lease.ok()) return std::move(lease).error();
  auto ttl = ttl_field(object.value(), limits);
  if (!ttl.ok()) return std::move(ttl).error();
  return ExtendBody{std::move(*lease.value()), ttl.value()};
}

Result<ReleaseBody> parse_release_body(std::string_view body) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  auto lease = string_field(object.value(), "lease", kMaxLeaseLength, true);
  if (!lease.ok()) return std::move(lease).error();
  return ReleaseBody{std::move(*lease.value())};
}

}  // namespace fencelock::service
