#include "fencelock/storage/engine_options.h"

#include <charconv>

#include "fencelock/storage/lease_timing.h"

namespace fencelock::storage {

namespace {

using std::chrono::milliseconds;

Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

bool in_range(milliseconds value, milliseconds low, milliseconds high) {
  return value >= low && value <= high;
}

std::string bound_message(milliseconds low, milliseconds high) {
  return "must be between " + std::to_string(low.count()) + " ms and " +
         std::to_string(high.count()) + " ms";
}

}  // namespace

std::optional<OptionProblem> find_option_problem(const EngineOptions& o) {
  auto problem = [](std::initializer_list<std::string_view> fields, std::string reason) {
    return std::optional<OptionProblem>(
        OptionProblem{std::vector<std::string_view>(fields), std::move(reason)});
  };
  if (o.nodes.empty() || o.nodes.size() > kMaxLockNodes) {
    return problem({"nodes"}, "need 1 to " + std::to_string(kMaxLockNodes) + " Redis nodes, got " +
                                  std::to_string(o.nodes.size()));
  }
  for (std::size_t i = 0; i < o.nodes.size(); ++i) {
    if (!parse_address(o.nodes[i].to_string()).ok()) {
      return problem({"nodes"}, "'" + o.nodes[i].to_string() +
                                    "' needs an IP address or a DNS name, and a port");
    }
    for (std::size_t j = i + 1; j < o.nodes.size(); ++j) {
      if (o.nodes[i].same_text(o.nodes[j])) {
        return problem({"nodes"}, o.nodes[i].to_string() + " is listed twice");
      }
    }
  }
  if (!in_range(o.node_timeout, milliseconds(1), milliseconds(10'000))) {
    return problem({"node_timeout"}, bound_message(milliseconds(1), milliseconds(10'000)));
  }
  if (!in_range(o.connect_timeout, milliseconds(1), milliseconds(60'000))) {
    return problem({"connect_timeout"}, bound_message(milliseconds(1), milliseconds(60'000)));
  }
  if (!in_range(o.resolve_timeout, milliseconds(1), milliseconds(60'000))) {
    return problem({"resolve_timeout"}, bound_message(milliseconds(1), milliseconds(60'000)));
  }
  if (!in_range(o.reconnect_min, milliseconds(1), milliseconds(60'000)) ||
      !in_range(o.reconnect_max, o.reconnect_min, milliseconds(60'000))) {
    return problem({"reconnect_min", "reconnect_max"},
                   "must satisfy 1 ms <= min <= max <= 60000 ms");
  }
  if (!(o.drift_factor >= 0.0 && o.drift_factor <= 0.5)) {
    return problem({"drift_factor"}, "must be between 0 and 0.5");
  }
  if (!in_range(o.retry_delay, milliseconds(0), milliseconds(60'000))) {
    return problem({"retry_delay"}, bound_message(milliseconds(0), milliseconds(60'000)));
  }
  if (!in_range(o.retry_jitter, milliseconds(0), milliseconds(60'000))) {
    return problem({"retry_jitter"}, bound_message(milliseconds(0), milliseconds(60'000)));
  }
  if (!in_range(o.min_ttl, milliseconds(1), milliseconds(86'400'000)) ||
      !in_range(o.max_ttl, o.min_ttl, milliseconds(86'400'000))) {
    return problem({"min_ttl", "max_ttl"},
                   "must satisfy 1 ms <= min_ttl <= max_ttl <= 86400000 ms");
  }
  if (!in_range(o.max_wait, milliseconds(0), milliseconds(3'600'000))) {
    return problem({"max_wait"}, bound_message(milliseconds(0), milliseconds(3'600'000)));
  }
  if (o.key_prefix.size() > 64) return problem({"key_prefix"}, "must be at most 64 bytes");
  // '#' marks the keys every deployment shares (the node marker, the registries, fences).
  if (o.key_prefix.find('#') != std::string::npos) {
    return problem({"key_prefix"}, "must not contain '#'");
  }
  if (o.exclusive_tokens.size() > 128 || o.exclusive_tokens.find(' ') != std::string::npos) {
    return problem({"exclusive_tokens"}, "must be at most 128 bytes without spaces");
  }
  if (o.shared_tokens.size() > 128 || o.shared_tokens.find(' ') != std::string::npos) {
    return problem({"shared_tokens"}, "must be at most 128 bytes without spaces");
  }
  return std::nullopt;
}

Status validate_engine_options(const EngineOptions& o) {
  const auto found = find_option_problem(o);
  if (!found) return Done{};
  std::string fields;
  for (const std::string_view field : found->fields)
    fields.append(fields.empty() ? "" : "/").append(field);
  return invalid(fields + ": " + found->reason);
}

}  // namespace fencelock::storage
