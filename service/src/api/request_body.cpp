#include "api/request_body.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "api/flat_json.h"
#include "fencelock/names.h"

namespace fencelock::service {

namespace {

using nlohmann::json;

ServiceResult<json> parse_object(std::string_view body) {
  json parsed = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return service_error("the body is not valid JSON");
  if (!parsed.is_object()) return service_error("the body must be a JSON object");
  return parsed;
}

// One field of a body as the validation below sees it, from either reader: nlohmann's DOM or, for
// the bodies of the hot routes, FlatJsonObject (flat_json.h, which reads only what it reads as
// nlohmann would). The rules and their messages are written once, over this view.
struct BodyField {
  enum class Kind { kAbsent, kNull, kUnsigned, kSigned, kString, kOther };
  Kind kind = Kind::kAbsent;
  std::uint64_t unsigned_value = 0;
  std::int64_t signed_value = 0;
  std::string_view text;
};

BodyField field_of(const json& object, const char* name) {
  BodyField field;
  const auto it = object.find(name);
  if (it == object.end()) return field;
  if (it->is_null()) {
    field.kind = BodyField::Kind::kNull;
  } else if (it->is_number_unsigned()) {
    field.kind = BodyField::Kind::kUnsigned;
    field.unsigned_value = it->get<std::uint64_t>();
  } else if (it->is_number_integer()) {
    field.kind = BodyField::Kind::kSigned;
    field.signed_value = it->get<std::int64_t>();
  } else if (it->is_string()) {
    field.kind = BodyField::Kind::kString;
    field.text = it->get_ref<const std::string&>();
  } else {
    field.kind = BodyField::Kind::kOther;
  }
  return field;
}

BodyField field_of(const FlatJsonObject& object, const char* name) {
  BodyField field;
  const FlatJsonValue* value = object.find(name);
  if (value == nullptr) return field;
  switch (value->kind) {
    case FlatJsonValue::Kind::kNull:
      field.kind = BodyField::Kind::kNull;
      break;
    case FlatJsonValue::Kind::kUnsigned:
      field.kind = BodyField::Kind::kUnsigned;
      field.unsigned_value = value->unsigned_value;
      break;
    case FlatJsonValue::Kind::kSigned:
      field.kind = BodyField::Kind::kSigned;
      field.signed_value = value->signed_value;
      break;
    case FlatJsonValue::Kind::kString:
      field.kind = BodyField::Kind::kString;
      field.text = value->text;
      break;
    case FlatJsonValue::Kind::kBool:
      field.kind = BodyField::Kind::kOther;
      break;
  }
  return field;
}

// An integer field in [low, high]. JSON floats (even 10.0), strings and booleans are refused.
template <class Object>
ServiceResult<std::optional<std::int64_t>> integer_field(const Object& object, const char* name,
                                                         std::int64_t low, std::int64_t high,
                                                         bool required) {
  const BodyField field = field_of(object, name);
  if (field.kind == BodyField::Kind::kAbsent || field.kind == BodyField::Kind::kNull) {
    if (required) return service_error(std::string(name) + " is required");
    return std::optional<std::int64_t>();
  }
  const auto out_of_range = [&] {
    return service_error(std::string(name) + " must be an integer between " + std::to_string(low) +
                         " and " + std::to_string(high));
  };
  std::int64_t value = 0;
  if (field.kind == BodyField::Kind::kUnsigned) {
    if (field.unsigned_value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return out_of_range();
    value = static_cast<std::int64_t>(field.unsigned_value);
  } else if (field.kind == BodyField::Kind::kSigned) {
    value = field.signed_value;
  } else {
    return out_of_range();
  }
  if (value < low || value > high) return out_of_range();
  return std::optional<std::int64_t>(value);
}

template <class Object>
ServiceResult<std::optional<std::string>> string_field(const Object& object, const char* name,
                                                       std::size_t max_length, bool required) {
  const BodyField field = field_of(object, name);
  if (field.kind == BodyField::Kind::kAbsent || field.kind == BodyField::Kind::kNull) {
    if (required) return service_error(std::string(name) + " is required");
    return std::optional<std::string>();
  }
  if (field.kind != BodyField::Kind::kString)
    return service_error(std::string(name) + " must be a string");
  if (field.text.size() > max_length) {
    return service_error(std::string(name) + " must be at most " + std::to_string(max_length) +
                         " characters");
  }
  return std::optional<std::string>(std::string(field.text));
}

// How many single-character edits turn `a` into `b` (Levenshtein), for "did you mean".
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

ServiceStatus unknown_field(std::string_view key, std::initializer_list<std::string_view> known) {
  std::string message = "unknown field '" + std::string(key.substr(0, 64)) + "'";
  std::string_view closest;
  std::size_t best = 3;  // more edits than this is no typo
  for (const std::string_view name : known) {
    // A prefix ("ttl" for "ttl_ms") is as likely a slip as a typo.
    const std::size_t distance =
        key.size() >= 3 && name.starts_with(key) ? 1 : edit_distance(key, name);
    if (distance < best) {
      best = distance;
      closest = name;
    }
  }
  if (!closest.empty()) message += " (did you mean '" + std::string(closest) + "'?)";
  message += "; this body takes";
  const char* separator = " ";
  for (const std::string_view name : known) {
    message += separator + std::string(name);
    separator = ", ";
  }
  return service_error(std::move(message));
}

// Refuses the first field of `object` that is not one of `known`.
ServiceStatus only_fields(const json& object, std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : object.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) return unknown_field(key, known);
  }
  return Done{};
}

ServiceStatus only_fields(const FlatJsonObject& object,
                          std::initializer_list<std::string_view> known) {
  for (std::size_t i = 0; i < object.size(); ++i) {
    if (std::find(known.begin(), known.end(), object.key(i)) == known.end())
      return unknown_field(object.key(i), known);
  }
  return Done{};
}

template <class Object>
ServiceResult<std::chrono::milliseconds> ttl_field(const Object& object, const BodyLimits& limits) {
  auto ttl = integer_field(object, "ttl_ms", limits.min_ttl.count(), limits.max_ttl.count(), true);
  if (!ttl.ok()) return std::move(ttl).error();
  return std::chrono::milliseconds(*ttl.value());
}

ServiceResult<std::vector<std::string>> names_field(const json& object) {
  const auto it = object.find("names");
  if (it == object.end() || it->is_null()) return service_error("names is required");
  if (!it->is_array()) return service_error("names must be an array of lock names");
  if (it->empty()) return service_error("names must hold at least one name");
  if (it->size() > storage::kMaxLockSetNames) {
    return service_error("names must hold at most " + std::to_string(storage::kMaxLockSetNames) +
                         " names");
  }
  std::vector<std::string> names;
  names.reserve(it->size());
  for (const json& entry : *it) {
    if (!entry.is_string()) return service_error("names must hold only strings");
    const auto& name = entry.get_ref<const std::string&>();
    if (!fencelock::is_valid_lock_name(name)) {
      return service_error("names: every " + std::string(fencelock::kLockNameRule));
    }
    if (std::find(names.begin(), names.end(), name) != names.end())
      return service_error("names holds '" + name + "' twice");
    names.push_back(name);
  }
  return names;
}

template <class Object>
ServiceResult<AcquireBody> acquire_fields(const Object& object, const BodyLimits& limits) {
  auto ttl = ttl_field(object, limits);
  if (!ttl.ok()) return std::move(ttl).error();
  auto wait = integer_field(object, "wait_ms", 0, limits.max_wait.count(), false);
  if (!wait.ok()) return std::move(wait).error();
  auto owner = string_field(object, "owner", kMaxOwnerLength, false);
  if (!owner.ok()) return std::move(owner).error();
  if (owner.value() && !storage::is_valid_holder(*owner.value())) {
    return service_error("owner must be at most 200 bytes without control characters");
  }
  return AcquireBody{ttl.value(), std::chrono::milliseconds(wait.value().value_or(0)),
                     owner.value().value_or(std::string())};
}

template <class Object>
ServiceResult<ExtendBody> extend_fields(const Object& object, const BodyLimits& limits,
                                        std::size_t max_lease) {
  auto lease = string_field(object, "lease", max_lease, true);
  if (!lease.ok()) return std::move(lease).error();
  auto ttl = ttl_field(object, limits);
  if (!ttl.ok()) return std::move(ttl).error();
  return ExtendBody{std::move(*lease.value()), ttl.value()};
}

template <class Object>
ServiceResult<ReleaseBody> release_fields(const Object& object, std::size_t max_lease) {
  auto lease = string_field(object, "lease", max_lease, true);
  if (!lease.ok()) return std::move(lease).error();
  return ReleaseBody{std::move(*lease.value())};
}

template <class Object>
ServiceResult<AcquireBody> revoke_fields(const Object& object, const BodyLimits& limits) {
  if (auto known = only_fields(object, {"ttl_ms", "owner"}); !known.ok())
    return std::move(known).error();
  return acquire_fields(object, limits);
}

template <class Object>
ServiceResult<AcquireBody> lock_acquire_fields(const Object& object, const BodyLimits& limits) {
  if (auto known = only_fields(object, {"ttl_ms", "wait_ms", "owner", "request_id"}); !known.ok())
    return std::move(known).error();
  auto body = acquire_fields(object, limits);
  if (!body.ok()) return body;
  auto request_id = string_field(object, "request_id", storage::kMaxRequestIdLength, false);
  if (!request_id.ok()) return std::move(request_id).error();
  if (request_id.value()) {
    if (!storage::is_valid_request_id(*request_id.value())) {
      return service_error("request_id must be 1 to 64 printable ASCII characters without spaces");
    }
    body.value().request_id = std::move(*request_id.value());
  }
  return body;
}

template <class Object>
ServiceResult<ExtendBody> lease_extend_fields(const Object& object, const BodyLimits& limits,
                                              std::size_t max_lease) {
  if (auto known = only_fields(object, {"lease", "ttl_ms"}); !known.ok())
    return std::move(known).error();
  return extend_fields(object, limits, max_lease);
}

template <class Object>
ServiceResult<ReleaseBody> lease_release_fields(const Object& object, std::size_t max_lease) {
  if (auto known = only_fields(object, {"lease"}); !known.ok()) return std::move(known).error();
  return release_fields(object, max_lease);
}

}  // namespace

ServiceResult<std::vector<std::string>> parse_set_names(std::string_view body) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  return names_field(object.value());
}

ServiceResult<SetAcquireBody> parse_set_acquire_body(std::string_view body,
                                                     const BodyLimits& limits) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  if (auto known = only_fields(object.value(), {"names", "ttl_ms", "wait_ms", "owner"});
      !known.ok())
    return std::move(known).error();
  auto names = names_field(object.value());
  if (!names.ok()) return std::move(names).error();
  auto acquire = acquire_fields(object.value(), limits);
  if (!acquire.ok()) return std::move(acquire).error();
  return SetAcquireBody{std::move(names).value(), std::move(acquire).value()};
}

ServiceResult<SetExtendBody> parse_set_extend_body(std::string_view body,
                                                   const BodyLimits& limits) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  if (auto known = only_fields(object.value(), {"names", "lease", "ttl_ms"}); !known.ok())
    return std::move(known).error();
  auto names = names_field(object.value());
  if (!names.ok()) return std::move(names).error();
  auto extend = extend_fields(object.value(), limits, kMaxSetLeaseLength);
  if (!extend.ok()) return std::move(extend).error();
  return SetExtendBody{std::move(names).value(), std::move(extend).value()};
}

ServiceResult<SetReleaseBody> parse_set_release_body(std::string_view body) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  if (auto known = only_fields(object.value(), {"names", "lease"}); !known.ok())
    return std::move(known).error();
  auto names = names_field(object.value());
  if (!names.ok()) return std::move(names).error();
  auto release = release_fields(object.value(), kMaxSetLeaseLength);
  if (!release.ok()) return std::move(release).error();
  return SetReleaseBody{std::move(names).value(), std::move(release).value()};
}

ServiceResult<PermitAcquireBody> parse_permit_acquire_body(std::string_view body,
                                                           const BodyLimits& limits) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  if (auto known = only_fields(object.value(), {"permits", "ttl_ms", "wait_ms", "owner"});
      !known.ok())
    return std::move(known).error();
  auto permits = integer_field(object.value(), "permits", 1, storage::kMaxPermits, true);
  if (!permits.ok()) return std::move(permits).error();
  auto acquire = acquire_fields(object.value(), limits);
  if (!acquire.ok()) return std::move(acquire).error();
  return PermitAcquireBody{static_cast<std::uint32_t>(*permits.value()),
                           std::move(acquire).value()};
}

ServiceResult<ExtendBody> parse_permit_extend_body(std::string_view body,
                                                   const BodyLimits& limits) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  return lease_extend_fields(object.value(), limits, kMaxPermitLeaseLength);
}

ServiceResult<ReleaseBody> parse_permit_release_body(std::string_view body) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  return lease_release_fields(object.value(), kMaxPermitLeaseLength);
}

ServiceResult<RwAcquireBody> parse_rw_acquire_body(std::string_view body,
                                                   const BodyLimits& limits) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  if (auto known = only_fields(object.value(), {"mode", "ttl_ms", "wait_ms", "owner"}); !known.ok())
    return std::move(known).error();
  auto mode = string_field(object.value(), "mode", 5, true);
  if (!mode.ok()) return std::move(mode).error();
  if (*mode.value() != "read" && *mode.value() != "write") {
    return service_error("mode must be \"read\" or \"write\"");
  }
  auto acquire = acquire_fields(object.value(), limits);
  if (!acquire.ok()) return std::move(acquire).error();
  return RwAcquireBody{*mode.value() == "write" ? storage::RwMode::kWrite : storage::RwMode::kRead,
                       std::move(acquire).value()};
}

ServiceResult<ExtendBody> parse_rw_extend_body(std::string_view body, const BodyLimits& limits) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  return lease_extend_fields(object.value(), limits, kMaxRwLeaseLength);
}

ServiceResult<ReleaseBody> parse_rw_release_body(std::string_view body) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  return lease_release_fields(object.value(), kMaxRwLeaseLength);
}

// The single-lock bodies are read by FlatJsonObject when it can, by nlohmann otherwise: the same
// fields, the same rules, the same messages either way.
ServiceResult<AcquireBody> parse_acquire_body(std::string_view body, const BodyLimits& limits) {
  if (const auto flat = FlatJsonObject::parse(body)) return lock_acquire_fields(*flat, limits);
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  return lock_acquire_fields(object.value(), limits);
}

ServiceResult<AcquireBody> parse_revoke_body(std::string_view body, const BodyLimits& limits) {
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  return revoke_fields(object.value(), limits);
}

ServiceResult<ExtendBody> parse_extend_body(std::string_view body, const BodyLimits& limits) {
  if (const auto flat = FlatJsonObject::parse(body))
    return lease_extend_fields(*flat, limits, kMaxLeaseLength);
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  return lease_extend_fields(object.value(), limits, kMaxLeaseLength);
}

ServiceResult<ReleaseBody> parse_release_body(std::string_view body) {
  if (const auto flat = FlatJsonObject::parse(body))
    return lease_release_fields(*flat, kMaxLeaseLength);
  auto object = parse_object(body);
  if (!object.ok()) return std::move(object).error();
  return lease_release_fields(object.value(), kMaxLeaseLength);
}

}  // namespace fencelock::service
