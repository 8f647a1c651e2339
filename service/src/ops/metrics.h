// fencelockd's metrics: counters, gauges and latency histograms fed from the request path and the
// engine, rendered for GET /metrics in the Prometheus text format 0.0.4. The families and their
// labels are listed in docs/api.md, "Metrics"; each has # HELP and # TYPE, all but the standard
// process_* families are prefixed fencelock_, and label values are escaped per the format.
// Updates run on the hot path from every thread: each is a few relaxed atomic adds into fixed
// arrays indexed by small enums (no map, no mutex, no allocation). A scrape reads the atomics: a
// sample, not a snapshot, so two counters updated together may be seen one before the other.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/route.h"
#include "fencelock/storage/engine_observer.h"
#include "fencelock/storage/engine_options.h"
#include "fencelock/storage/redlock_engine.h"
#include "ops/latency_buckets.h"

namespace fencelock::service {

// The Content-Type GET /metrics must answer with for the output of Metrics::render().
inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

// A value kept elsewhere (the HTTP server, the handlers, the token source), sampled at scrape time.
// A name ending in _total is rendered as a counter, any other as a gauge. `help`: the HELP text,
// a generic one if empty.
struct ExtraMetric {
  ExtraMetric(std::string metric_name, double metric_value, std::string_view help_text = {})
      : name(std::move(metric_name)), value(metric_value), help(help_text) {}
  std::string name;
  double value = 0;
  std::string_view help;
};

// The service's own figures at a scrape, read from the server, the handlers, the engine, the
// token source and the log.
struct ServiceFigures {
  struct Http {
    std::size_t open_connections = 0;
    std::uint64_t refused_connections = 0, hang_ups = 0;
    std::size_t body_bytes_reserved = 0;
    std::optional<std::uint64_t> tls_handshake_failures;  // with TLS only
  };
  std::optional<Http> http;                     // once the server exists
  std::optional<std::size_t> acquires_waiting;  // once the handlers exist
  std::optional<std::size_t> watches_waiting;   // once the handlers exist
  std::size_t lock_nodes_voting = 0;
  bool token_source_up = false;
  std::uint64_t token_draw_errors = 0, log_records_dropped = 0;
};
// The figures as gauges and counters, each with its name and help (the metric families of
// docs/operations.md).
std::vector<ExtraMetric> service_gauges(const ServiceFigures& figures);

class Metrics final : public storage::EngineObserver {
 public:
  // The HTTP statuses counted apart (record_request()) and "other".
  static constexpr std::size_t kStatusCount = 16;
  // Every counter starts at zero. Not copyable or movable: the engine holds a pointer to it, so
  // it must outlive the engine (and every session that records into it).
  Metrics() = default;
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // One request finished: its route, the HTTP status sent and how long it took from the first
  // byte read to the last byte written. Statuses 200, 400, 401, 403, 404, 405, 408, 409, 413,
  // 415, 421, 429, 499, 500 and 503 are counted under their own label; any other under
  // status="other". A route outside the enum
  // counts as kNotFound; a negative duration as zero. Thread-safe, lock-free, never throws.
  void record_request(Route route, unsigned status, std::chrono::nanoseconds duration) noexcept;

  // EngineObserver. Thread-safe and lock-free; none of them blocks or allocates.
  //
  // on_operation: an acquire counts one outcome from report.error (kLeaseLost, which acquire never
  // reports, counts as "internal"), observes report.elapsed into acquire_duration_seconds, and,
  // when report.token_draw > 0, observes it into token_draw_duration_seconds — so a draw that
  // failed is timed too, while an acquire refused before drawing adds nothing. Extend, release and
  // inspect count one outcome each (kLocked, which they never report, counts as "internal").
  //
  // on_node_up / on_node_down / on_node_quarantined count per node index; an index at or beyond
  // storage::kMaxLockNodes (which the engine's options forbid) is ignored.
  void on_node_up(std::size_t node, const std::string& address, const std::string& run_id) override;
  void on_node_down(std::size_t node, const std::string& address, const std::string& why) override;
  void on_node_quarantined(std::size_t node, const std::string& address,
                           std::chrono::milliseconds duration) override;
  void on_operation(const storage::OperationReport& report) override;

  // Renders every family in the text format, ending with a newline. `nodes` is
  // RedlockEngine::node_statuses() at scrape time: nodes[i] names node index i, so per-node series
  // exist only for i < nodes.size(). `extra_gauges` are appended as gauges, one family each, with
  // their HELP line (e.g. {"fencelock_http_open_connections", 3, "..."}); a name that is not a
  // valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) is skipped so the output stays parseable.
  // Precondition: extra gauge names are distinct and do not collide with the families above.
  // Thread-safe: may run concurrently with every update. Throws only std::bad_alloc.
  std::string render(const std::vector<storage::NodeStatus>& nodes,
                     const std::vector<ExtraMetric>& extra_gauges = {}) const;

 private:
  using Counter = std::atomic<std::uint64_t>;
  static constexpr std::size_t kAcquireOutcomeCount = 7;  // granted ... permits_mismatch
  static constexpr std::size_t kLockOperationCount = 3;   // extend, release, inspect
  static constexpr std::size_t kLockOutcomeCount = 5;     // ok ... internal
  static constexpr std::size_t kNodeSlots = storage::kMaxLockNodes;

  std::array<std::array<Counter, kStatusCount>, kRouteCount> requests_{};
  std::array<LatencyBuckets, kRouteCount> request_durations_;
  std::array<Counter, kAcquireOutcomeCount> acquires_{};
  LatencyBuckets acquire_duration_;
  LatencyBuckets token_draw_duration_;
  std::array<std::array<Counter, kLockOutcomeCount>, kLockOperationCount> lock_operations_{};
  std::array<Counter, kNodeSlots> node_ups_{};
  std::array<Counter, kNodeSlots> node_downs_{};
  std::array<Counter, kNodeSlots> node_quarantines_{};
};

}  // namespace fencelock::service
