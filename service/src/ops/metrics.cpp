#include "ops/metrics.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <optional>

#include "version.h"

namespace fencelock::service {
namespace {

using storage::ErrorCode;
using storage::OperationKind;

std::size_t route_index(Route route) noexcept {
  const auto i = static_cast<std::size_t>(route);
  return i < kRouteCount ? i : static_cast<std::size_t>(Route::kNotFound);
}

// A fixed table keeps the label set, and so the number of series, bounded whatever a handler
// answers; the statuses listed are every one the API documents.
constexpr std::array<unsigned, 15> kStatuses{200, 400, 401, 403, 404, 405, 408, 409,
                                             413, 415, 421, 429, 499, 500, 503};
static_assert(kStatuses.size() + 1 == Metrics::kStatusCount);
constexpr std::array<std::string_view, kStatuses.size() + 1> kStatusLabels{
    "200", "400", "401", "403", "404", "405", "408", "409",
    "413", "415", "421", "429", "499", "500", "503", "other"};

std::size_t status_index(unsigned status) noexcept {
  for (std::size_t i = 0; i < kStatuses.size(); ++i) {
    if (kStatuses[i] == status) return i;
  }
  return kStatuses.size();
}

constexpr std::array<std::string_view, 7> kAcquireOutcomes{
    "granted", "locked", "unavailable", "invalid", "internal", "cancelled", "permits_mismatch"};

std::size_t acquire_outcome(const std::optional<ErrorCode>& error) noexcept {
  if (!error) return 0;
  switch (*error) {
    case ErrorCode::kLocked:
      return 1;
    case ErrorCode::kUnavailable:
      return 2;
    case ErrorCode::kInvalidArgument:
      return 3;
    case ErrorCode::kPermitsMismatch:  // a permit asked of a semaphore with another count
      return 6;
    case ErrorCode::kLeaseLost:  // acquire never reports it: a broken invariant
    case ErrorCode::kInternal:
      return 4;
    case ErrorCode::kCancelled:
      return 5;
  }
  return 4;
}

constexpr std::array<std::string_view, 3> kLockOperations{"extend", "release", "inspect"};
// Per operation: a release that finds its lease gone answers released:false, not an error.
constexpr std::array<std::array<std::string_view, 5>, 3> kLockOutcomes{{
    {"ok", "lease_lost", "unavailable", "invalid", "internal"},
    {"ok", "not_held", "unavailable", "invalid", "internal"},
    {"ok", "lease_lost", "unavailable", "invalid", "internal"},
}};

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
    case ErrorCode::kPermitsMismatch:
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

#if defined(__clang__)
constexpr std::string_view kCompiler = "clang " __clang_version__;
#elif defined(__GNUC__)
constexpr std::string_view kCompiler = "gcc " __VERSION__;
#else
constexpr std::string_view kCompiler = "unknown";
#endif

// Reads a small /proc file whole into `buffer` (no allocation); the bytes read, 0 on failure.
std::size_t read_proc_file(const char* path, char* buffer, std::size_t size) noexcept {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  std::size_t got = 0;
  while (got + 1 < size) {
    const ssize_t n = ::read(fd, buffer + got, size - 1 - got);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  buffer[got] = '\0';
  return got;
}

// The whole number that starts `text` after any spaces; nullopt if there is none.
std::optional<std::uint64_t> leading_number(std::string_view text) noexcept {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc()) return std::nullopt;
  return value;
}

std::optional<double> resident_memory_bytes() noexcept {
  char statm[256];
  if (read_proc_file("/proc/self/statm", statm, sizeof statm) == 0) return std::nullopt;
  std::string_view text(statm);
  const std::size_t space = text.find(' ');  // the first field is the total size; RSS follows
  if (space == std::string_view::npos) return std::nullopt;
  const auto pages = leading_number(text.substr(space));
  if (!pages) return std::nullopt;
  return static_cast<double>(*pages) * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

std::optional<double> open_fds() noexcept {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return std::nullopt;
  std::size_t count = 0;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return static_cast<double>(count > 0 ? count - 1 : 0);  // not the one reading the directory
}

// Seconds since the epoch at which the process started: its start in clock ticks after boot
// (/proc/self/stat, field 22) plus the boot time (/proc/stat, btime). It never changes: read once.
std::optional<double> start_time_seconds() {
  static const std::optional<double> start = []() -> std::optional<double> {
    char stat[1024];
    if (read_proc_file("/proc/self/stat", stat, sizeof stat) == 0) return std::nullopt;
    std::string_view fields(stat);
    const std::size_t comm_end = fields.rfind(')');  // the command name may hold spaces
    if (comm_end == std::string_view::npos) return std::nullopt;
    fields.remove_prefix(comm_end + 1);
    for (int field = 3; field < 22; ++field) {  // fields[0] is field 3 (the state)
      const std::size_t space = fields.find(' ', 1);
      if (space == std::string_view::npos) return std::nullopt;
      fields.remove_prefix(space);
    }
    const auto ticks = leading_number(fields);
    char proc_stat[16384];
    if (!ticks || read_proc_file("/proc/stat", proc_stat, sizeof proc_stat) == 0)
      return std::nullopt;
    const std::string_view all(proc_stat);
    const std::size_t btime = all.find("\nbtime ");
    if (btime == std::string_view::npos) return std::nullopt;
    const auto boot = leading_number(all.substr(btime + 7));
    if (!boot) return std::nullopt;
    return static_cast<double>(*boot) +
           static_cast<double>(*ticks) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }();
  return start;
}

// The standard process families, as Prometheus client libraries name them.
void render_process_metrics(Exposition& text) {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) == 0) {
    const auto seconds = [](const timeval& t) {
      return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
    };
    text.family("process_cpu_seconds_total", "counter",
                "Total user and system CPU time spent in seconds.");
    text.sample("process_cpu_seconds_total", {}, seconds(usage.ru_utime) + seconds(usage.ru_stime));
  }
  if (const auto rss = resident_memory_bytes()) {
    text.family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    text.sample("process_resident_memory_bytes", {}, *rss);
  }
  if (const auto fds = open_fds()) {
    text.family("process_open_fds", "gauge", "Number of open file descriptors.");
    text.sample("process_open_fds", {}, *fds);
  }
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    text.family("process_max_fds", "gauge", "Maximum number of open file descriptors.");
    text.sample("process_max_fds", {}, static_cast<double>(limit.rlim_cur));
  }
  if (const auto start = start_time_seconds()) {
    text.family("process_start_time_seconds", "gauge",
                "Start time of the process since unix epoch in seconds.");
    text.sample("process_start_time_seconds", {}, *start);
  }
}

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

namespace {

// What each lock node's status says at scrape time (NodeStatus): up, quarantined, its counters.
void render_node_statuses(Exposition& text, const std::vector<storage::NodeStatus>& nodes) {
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
}

// The caller's extra gauges and counters, then the build's identity.
void render_extra_and_build(Exposition& text, const std::vector<ExtraMetric>& extra_gauges) {
  for (const ExtraMetric& extra : extra_gauges) {
    if (!is_valid_metric_name(extra.name)) continue;
    text.family(extra.name, extra.name.ends_with("_total") ? "counter" : "gauge",
                extra.help.empty() ? "Reported by fencelockd at scrape time." : extra.help);
    text.sample(extra.name, {}, extra.value);
  }

  text.family("fencelock_build_info", "gauge",
              "Always 1; its labels say which fencelockd build is running.");
  text.sample("fencelock_build_info", {{"version", kVersion}, {"compiler", kCompiler}},
              std::uint64_t{1});
}

}  // namespace

std::string Metrics::render(const std::vector<storage::NodeStatus>& nodes,
                            const std::vector<ExtraMetric>& extra_gauges) const {
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
                  {{"operation", kLockOperations[op]}, {"outcome", kLockOutcomes[op][o]}},
                  load(lock_operations_[op][o]));
    }
  }

  render_node_statuses(text, nodes);

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

  render_extra_and_build(text, extra_gauges);
  render_process_metrics(text);
  return out;
}

std::vector<ExtraMetric> service_gauges(const ServiceFigures& figures) {
  std::vector<ExtraMetric> gauges;
  gauges.reserve(10);
  if (const auto& http = figures.http) {
    gauges.push_back({"fencelock_http_open_connections",
                      static_cast<double>(http->open_connections), "Client connections open now."});
    gauges.push_back({"fencelock_http_connections_refused_total",
                      static_cast<double>(http->refused_connections),
                      "Connections (and requests on connections let in for probes only) answered "
                      "503 because of --max-connections or --max-connections-per-client."});
    gauges.push_back({"fencelock_http_client_hang_ups_total", static_cast<double>(http->hang_ups),
                      "Clients that closed the connection in the middle of sending a request (not "
                      "counted as requests)."});
    gauges.push_back({"fencelock_http_body_bytes_reserved",
                      static_cast<double>(http->body_bytes_reserved),
                      "Bytes of the --body-memory budget held by request bodies now."});
    if (http->tls_handshake_failures) {
      gauges.push_back({"fencelock_tls_handshake_failures_total",
                        static_cast<double>(*http->tls_handshake_failures),
                        "TLS handshakes that failed or timed out."});
    }
  }
  if (figures.acquires_waiting) {
    gauges.push_back({"fencelock_acquires_waiting", static_cast<double>(*figures.acquires_waiting),
                      "Acquires with a wait_ms that have not been answered yet."});
  }
  if (figures.watches_waiting) {
    gauges.push_back({"fencelock_watches_waiting", static_cast<double>(*figures.watches_waiting),
                      "Watches of a lock (after_token) that have not been answered yet."});
  }
  gauges.push_back({"fencelock_lock_nodes_voting", static_cast<double>(figures.lock_nodes_voting),
                    "Lock nodes whose votes count now (up and not quarantined)."});
  gauges.push_back({"fencelock_token_source_up", figures.token_source_up ? 1.0 : 0.0,
                    "1 if the token source can hand out fencing tokens now, else 0."});
  gauges.push_back({"fencelock_token_draw_errors_total",
                    static_cast<double>(figures.token_draw_errors),
                    "Fencing token draws that failed (acquires and POST /v1/tokens)."});
  gauges.push_back({"fencelock_log_records_dropped_total",
                    static_cast<double>(figures.log_records_dropped),
                    "Log records not written: the log's queue was full (stderr did not keep up) or "
                    "a write to stderr failed."});
  return gauges;
}

}  // namespace fencelock::service
