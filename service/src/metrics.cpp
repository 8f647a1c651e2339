#include "metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <optional>

namespace fencelock::service {
namespace {

using storage::ErrorCode;
using storage::OperationKind;

static_assert(static_cast<std::size_t>(Route::kNotFound) + 1 == kRouteCount,
              "kRouteCount must grow with Route");

std::size_t route_index(Route route) noexcept {
  const auto i = static_cast<std::size_t>(route);
  return i < kRouteCount ? i : static_cast<std::size_t>(Route::kNotFound);
}

// A fixed table keeps the label set, and so the number of series, bounded whatever a handler
// answers; the statuses listed are every one the API documents.
constexpr std::array<unsigned, 10> kStatuses{200, 400, 404, 405, 408, 409, 413, 499, 500, 503};
constexpr std::array<std::string_view, kStatuses.size() + 1> kStatusLabels{
    "200", "400", "404", "405", "408", "409", "413", "499", "500", "503", "other"};

std::size_t status_index(unsigned status) noexcept {
  for (std::size_t i = 0; i < kStatuses.size(); ++i) {
    if (kStatuses[i] == status) return i;
  }
  return kStatuses.size();
}

constexpr std::array<std::string_view, 6> kAcquireOutcomes{"granted", "locked",   "unavailable",
                                                           "invalid", "internal", "cancelled"};

std::size_t acquire_outcome(const std::optional<ErrorCode>& error) noexcept {
  if (!error) return 0;
  switch (*error) {
    case ErrorCode::kLocked:
      return 1;
    case ErrorCode::kUnavailable:
      return 2;
    case ErrorCode::kInvalidArgument:
      return 3;
    case ErrorCode::kLeaseLost:  // acquire never reports it: a broken invariant
    case ErrorCode::kInternal:
      return 4;
    case ErrorCode::kCancelled:
      return 5;
  }
  return 4;
}

constexpr std::array<std::string_view, 3> kLockOperations{"extend", "release", "inspect"};
constexpr std::array<std::string_view, 5> kLockOutcomes{"ok", "lease_lost", "unavailable",
                                                        "invalid", "internal"};

std::size_t lock_outcome(const std::optional<ErrorCode>& error) noexcept {
  if (!error) return 0;
  switch (*error) {
    case ErrorCode::kLeaseLost:
      return 1;
    case ErrorCode::kUnavailable:
      return 2;
    case ErrorCode::kInvalidArgument:
      return 3;
    case ErrorCode::kLocked:  // only acquire reports them
    case ErrorCode::kCancelled:
    case ErrorCode::kInternal:
      return 4;
  }
  return 4;
}

std::chrono::nanoseconds as_nanoseconds(std::chrono::steady_clock::duration d) noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d);
}

std::uint64_t load(const std::atomic<std::uint64_t>& counter) noexcept {
  return counter.load(std::memory_order_relaxed);
}

void bump(std::atomic<std::uint64_t>& counter) noexcept {
  counter.fetch_add(1, std::memory_order_relaxed);
}

bool is_valid_metric_name(std::string_view name) noexcept {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    const bool digit = c >= '0' && c <= '9';
    if (!letter && !(digit && i > 0)) return false;
  }
  return true;
}

struct Label {
  std::string_view name;
  std::string_view value;
};

// Appends text-format lines. The format's rules live here and nowhere else: label values escape
// backslash, double quote and newline; values are Go-parseable floats ("+Inf", "NaN").
class Exposition {
 public:
  explicit Exposition(std::string& out) : out_(out) {}

  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }

  void sample(std::string_view name, std::initializer_list<Label> labels, std::uint64_t value) {
    series(name, {}, labels, {});
    append_uint(value);
    out_ += '\n';
  }

  void sample(std::string_view name, std::initializer_list<Label> labels, double value) {
    series(name, {}, labels, {});
    append_double(value);
    out_ += '\n';
  }

  void histogram(std::string_view name, std::initializer_list<Label> labels,
                 const LatencyBuckets& buckets) {
    const LatencyBuckets::Snapshot s = buckets.snapshot();
    for (std::size_t i = 0; i < LatencyBuckets::kBucketCount; ++i) {
      series(name, "_bucket", labels, LatencyBuckets::le_label(i));
      append_uint(s.cumulative[i]);
      out_ += '\n';
    }
    series(name, "_sum", labels, {});
    append_double(s.sum_seconds);
    out_ += '\n';
    series(name, "_count", labels, {});
    append_uint(s.count);
    out_ += '\n';
  }

 private:
  // Writes `name<suffix>{labels[,le="..."]} ` up to the value.
  void series(std::string_view name, std::string_view suffix, std::initializer_list<Label> labels,
              std::string_view le) {
    out_ += name;
    out_ += suffix;
    if (labels.size() != 0 || !le.empty()) {
      out_ += '{';
      bool first = true;
      for (const Label& label : labels) {
        if (!first) out_ += ',';
        first = false;
        append_label(label);
      }
      if (!le.empty()) {
        if (!first) out_ += ',';
        append_label({"le", le});
      }
      out_ += '}';
    }
    out_ += ' ';
  }

  void append_label(const Label& label) {
    out_ += label.name;
    out_ += "=\"";
    for (const char c : label.value) {
      switch (c) {
        case '\\':
          out_ += "\\\\";
          break;
        case '"':
          out_ += "\\\"";
          break;
        case '\n':
          out_ += "\\n";
          break;
        default:
          out_ += c;
      }
    }
    out_ += '"';
  }

  void append_uint(std::uint64_t value) {
    char buffer[24];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    static_cast<void>(ec);  // 24 bytes hold any uint64
    out_.append(buffer, end);
  }

  void append_double(double value) {
    if (std::isnan(value)) {
      out_ += "NaN";
    } else if (std::isinf(value)) {
      out_ += value > 0 ? "+Inf" : "-Inf";
    } else {
      // Shortest round-trip form: exact for integers up to 2^53, and Go's ParseFloat reads it.
      char buffer[32];
      const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
      static_cast<void>(ec);  // 32 bytes hold any double's shortest form
      out_.append(buffer, end);
    }
  }

  std::string& out_;
};

}  // namespace

void Metrics::record_request(Route route, unsigned status,
                             std::chrono::nanoseconds duration) noexcept {
  const std::size_t r = route_index(route);
  bump(requests_[r][status_index(status)]);
  request_durations_[r].observe(duration);
}

void Metrics::on_node_up(std::size_t node, const std::string& /*address*/,
                         const std::string& /*run_id*/) {
  if (node < kNodeSlots) bump(node_ups_[node]);
}

void Metrics::on_node_down(std::size_t node, const std::string& /*address*/,
                           const std::string& /*why*/) {
  if (node < kNodeSlots) bump(node_downs_[node]);
}

void Metrics::on_node_quarantined(std::size_t node, const std::string& /*address*/,
                                  std::chrono::milliseconds /*duration*/) {
  if (node < kNodeSlots) bump(node_quarantines_[node]);
}

void Metrics::on_operation(const storage::OperationReport& report) {
  switch (report.kind) {
    case OperationKind::kAcquire:
      bump(acquires_[acquire_outcome(report.error)]);
      acquire_duration_.observe(as_nanoseconds(report.elapsed));
      if (report.token_draw > std::chrono::steady_clock::duration::zero()) {
        token_draw_duration_.observe(as_nanoseconds(report.token_draw));
      }
      return;
    case OperationKind::kExtend:
      bump(lock_operations_[0][lock_outcome(report.error)]);
      return;
    case OperationKind::kRelease:
      bump(lock_operations_[1][lock_outcome(report.error)]);
      return;
    case OperationKind::kInspect:
      bump(lock_operations_[2][lock_outcome(report.error)]);
      return;
  }
}

std::string Metrics::render(const std::vector<storage::NodeStatus>& nodes,
                            const std::vector<std::pair<std::string, double>>& extra_gauges) const {
  std::string out;
  out.reserve(std::size_t{16} * 1024);
  Exposition text(out);

  text.family("fencelock_http_requests_total", "counter",
              "HTTP requests answered, by route and status.");
  for (std::size_t r = 0; r < kRouteCount; ++r) {
    for (std::size_t s = 0; s < kStatusCount; ++s) {
      // Only pairs that happened: most route/status pairs never occur and would be noise.
      if (const std::uint64_t n = load(requests_[r][s]); n != 0) {
        text.sample("fencelock_http_requests_total",
                    {{"route", route_label(static_cast<Route>(r))}, {"status", kStatusLabels[s]}},
                    n);
      }
    }
  }

  text.family("fencelock_http_request_duration_seconds", "histogram",
              "Time from the first byte of a request to the last byte of its response.");
  for (std::size_t r = 0; r < kRouteCount; ++r) {
    text.histogram("fencelock_http_request_duration_seconds",
                   {{"route", route_label(static_cast<Route>(r))}}, request_durations_[r]);
  }

  text.family("fencelock_acquire_total", "counter", "Lock acquisitions finished, by outcome.");
  for (std::size_t o = 0; o < kAcquireOutcomeCount; ++o) {
    text.sample("fencelock_acquire_total", {{"outcome", kAcquireOutcomes[o]}}, load(acquires_[o]));
  }

  text.family("fencelock_acquire_duration_seconds", "histogram",
              "Time an acquisition took in the engine, retries included, whatever its outcome.");
  text.histogram("fencelock_acquire_duration_seconds", {}, acquire_duration_);

  text.family("fencelock_token_draw_duration_seconds", "histogram",
              "Time spent drawing a fencing token, failed draws included.");
  text.histogram("fencelock_token_draw_duration_seconds", {}, token_draw_duration_);

  text.family("fencelock_lock_operations_total", "counter",
              "Extend, release and inspect operations finished, by outcome.");
  for (std::size_t op = 0; op < kLockOperationCount; ++op) {
    for (std::size_t o = 0; o < kLockOutcomeCount; ++o) {
      text.sample("fencelock_lock_operations_total",
                  {{"operation", kLockOperations[op]}, {"outcome", kLockOutcomes[o]}},
                  load(lock_operations_[op][o]));
    }
  }

  text.family("fencelock_node_up", "gauge", "1 if the lock node is connected, else 0.");
  for (const auto& node : nodes) {
    text.sample("fencelock_node_up", {{"node", node.address}}, std::uint64_t{node.up ? 1U : 0U});
  }
  text.family("fencelock_node_quarantined", "gauge",
              "1 if the lock node is up but not voting after a restart, else 0.");
  for (const auto& node : nodes) {
    text.sample("fencelock_node_quarantined", {{"node", node.address}},
                std::uint64_t{node.quarantined ? 1U : 0U});
  }

  struct NodeCounter {
    std::string_view name;
    std::string_view help;
    std::uint64_t storage::NodeStatus::*field;
  };
  static constexpr std::array<NodeCounter, 6> kNodeCounters{{
      {"fencelock_node_commands_total", "Commands sent to the lock node.",
       &storage::NodeStatus::commands},
      {"fencelock_node_errors_total", "Error replies from the lock node.",
       &storage::NodeStatus::errors},
      {"fencelock_node_timeouts_total", "Commands to the lock node that timed out.",
       &storage::NodeStatus::timeouts},
      {"fencelock_node_disconnects_total", "Connections to the lock node lost.",
       &storage::NodeStatus::disconnects},
      {"fencelock_node_resolve_failures_total",
       "Resolutions of the lock node's DNS name that failed.",
       &storage::NodeStatus::resolve_failures},
      {"fencelock_node_address_changes_total",
       "Connections to the lock node that reached another IP address than the last one.",
       &storage::NodeStatus::address_changes},
  }};
  for (const NodeCounter& counter : kNodeCounters) {
    text.family(counter.name, "counter", counter.help);
    for (const auto& node : nodes) {
      text.sample(counter.name, {{"node", node.address}}, node.*counter.field);
    }
  }

  const std::size_t observed_nodes = std::min(nodes.size(), kNodeSlots);
  text.family("fencelock_node_transitions_total", "counter",
              "Times the lock node came up or went down.");
  for (std::size_t i = 0; i < observed_nodes; ++i) {
    text.sample("fencelock_node_transitions_total",
                {{"node", nodes[i].address}, {"direction", "up"}}, load(node_ups_[i]));
    text.sample("fencelock_node_transitions_total",
                {{"node", nodes[i].address}, {"direction", "down"}}, load(node_downs_[i]));
  }
  text.family("fencelock_node_quarantines_total", "counter",
              "Times the lock node was quarantined after a restart.");
  for (std::size_t i = 0; i < observed_nodes; ++i) {
    text.sample("fencelock_node_quarantines_total", {{"node", nodes[i].address}},
                load(node_quarantines_[i]));
  }

  for (const auto& [name, value] : extra_gauges) {
    if (!is_valid_metric_name(name)) continue;
    // A name ending in _total is a counter kept elsewhere (the HTTP server's), sampled here.
    text.family(name, name.ends_with("_total") ? "counter" : "gauge",
                "Reported by fencelockd at scrape time.");
    text.sample(name, {}, value);
  }
  return out;
}

}  // namespace fencelock::service
