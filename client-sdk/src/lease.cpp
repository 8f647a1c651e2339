#include "fencelock/lease.h"

#include <algorithm>
#include <charconv>

#include "fencelock/names.h"

namespace fencelock {

namespace {

// Bounds the service keeps too (docs/api.md): names per set, permits per semaphore.
constexpr std::size_t kMaxSetNames = 16;
constexpr std::uint32_t kMaxPermits = 64;

Error invalid(std::string message) {
  return Error{ErrorCode::kInvalidArgument, std::move(message), 0, std::nullopt};
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ",") + name;
  return out;
}

// A positive decimal without leading zeros that fits T.
template <class T>
std::optional<T> positive_decimal(std::string_view text) {
  if (text.empty() || text.front() == '0') return std::nullopt;
  T value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// A decimal ("0" allowed) without leading zeros that fits T.
template <class T>
std::optional<T> decimal(std::string_view text) {
  if (text == "0") return T{0};
  return positive_decimal<T>(text);
}

bool is_hex(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  });
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (;;) {
    const auto at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

}  // namespace

Lease::Lease(const std::string& name, std::string lease_string, std::uint64_t token,
             std::chrono::milliseconds ttl, Clock::time_point deadline)
    : Lease(LeaseKind::kLock, name, {name}, {token}, 0, 0, std::move(lease_string), ttl, deadline) {
}

Lease::Lease(LeaseKind kind, std::string name, std::vector<std::string> names,
             std::vector<std::uint64_t> tokens, std::uint32_t permits, std::uint32_t slot,
             std::string lease_string, std::chrono::milliseconds ttl, Clock::time_point deadline)
    : kind_(kind),
      name_(std::move(name)),
      names_(std::move(names)),
      tokens_(std::move(tokens)),
      permits_(permits),
      slot_(slot),
      lease_string_(std::move(lease_string)),
      ttl_(ttl),
      deadline_(deadline) {}

Lease Lease::lock_set(std::vector<std::string> names, std::vector<std::uint64_t> tokens,
                      std::string lease_string, std::chrono::milliseconds ttl,
                      Clock::time_point deadline) {
  std::string label = joined(names);
  return Lease(LeaseKind::kSet, std::move(label), std::move(names), std::move(tokens), 0, 0,
               std::move(lease_string), ttl, deadline);
}

Lease Lease::permit(const std::string& name, std::uint32_t permits, std::uint32_t slot,
                    std::string lease_string, std::uint64_t token, std::chrono::milliseconds ttl,
                    Clock::time_point deadline) {
  return Lease(LeaseKind::kPermit, name, {name}, {token}, permits, slot, std::move(lease_string),
               ttl, deadline);
}

Lease Lease::rw_grant(LeaseKind kind, const std::string& name, std::string lease_string,
                      std::uint64_t token, std::chrono::milliseconds ttl,
                      Clock::time_point deadline) {
  return Lease(kind, name, {name}, {token}, 0, 0, std::move(lease_string), ttl, deadline);
}

Lease Lease::copy() const {
  return Lease(kind_, name_, names_, tokens_, permits_, slot_, lease_string_, ttl_, deadline_);
}

std::uint64_t Lease::token_of(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < names_.size() && i < tokens_.size(); ++i) {
    if (names_[i] == name) return tokens_[i];
  }
  return 0;
}

std::chrono::milliseconds Lease::remaining() const noexcept {
  const auto left = deadline_ - Clock::now();
  return left.count() > 0 ? std::chrono::floor<std::chrono::milliseconds>(left)
                          : std::chrono::milliseconds(0);
}

Result<Lease> lease_from_string(LeaseKind kind, std::vector<std::string> names,
                                std::string lease_string, std::chrono::milliseconds ttl) {
  const auto now = Lease::Clock::now();
  if (names.empty()) return invalid("a lease needs its name");
  if (kind != LeaseKind::kSet && names.size() != 1)
    return invalid("a lock or a permit has exactly one name");
  if (names.size() > kMaxSetNames) return invalid("a lock set has at most 16 names");
  for (const auto& name : names) {
    if (!is_valid_lock_name(name)) return invalid("'" + name + "': " + std::string(kLockNameRule));
  }
  std::sort(names.begin(), names.end());
  if (const auto twice = std::adjacent_find(names.begin(), names.end()); twice != names.end())
    return invalid("'" + *twice + "' is named twice");

  const auto parts = split(lease_string, '.');
  const bool rw = kind == LeaseKind::kRead || kind == LeaseKind::kWrite;
  const std::size_t expected_parts = kind == LeaseKind::kPermit ? 4 : rw ? 3 : 2;
  if (parts.size() != expected_parts || !is_hex(parts[1]))
    return invalid("a malformed lease string");
  std::vector<std::uint64_t> tokens;
  for (const auto text : split(parts[0], ',')) {
    const auto token = positive_decimal<std::uint64_t>(text);
    if (!token) return invalid("a malformed lease string (its tokens)");
    tokens.push_back(*token);
  }
  if (tokens.size() != names.size()) {
    return invalid("the lease string holds " + std::to_string(tokens.size()) + " token(s) for " +
                   std::to_string(names.size()) + " name(s)");
  }
  switch (kind) {
    case LeaseKind::kLock:
      return Lease(names.front(), std::move(lease_string), tokens.front(), ttl, now);
    case LeaseKind::kSet:
      return Lease::lock_set(std::move(names), std::move(tokens), std::move(lease_string), ttl,
                             now);
    case LeaseKind::kPermit: {
      const auto permits = positive_decimal<std::uint32_t>(parts[2]);
      const auto slot = decimal<std::uint32_t>(parts[3]);
      if (!permits || !slot || *permits > kMaxPermits || *slot >= *permits)
        return invalid("a malformed permit lease string (its permits or slot)");
      return Lease::permit(names.front(), *permits, *slot, std::move(lease_string), tokens.front(),
                           ttl, now);
    }
    case LeaseKind::kRead:
    case LeaseKind::kWrite:
      if (parts[2] != (kind == LeaseKind::kWrite ? "w" : "r"))
        return invalid("a malformed read/write lock lease string (its mode)");
      return Lease::rw_grant(kind, names.front(), std::move(lease_string), tokens.front(), ttl,
                             now);
  }
  return invalid("unknown lease kind");
}

}  // namespace fencelock
