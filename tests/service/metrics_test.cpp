#include "ops/metrics.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <latch>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "prometheus_text.h"

using namespace fencelock::service;
using namespace fencelock::testing;
using namespace std::chrono_literals;
using fencelock::storage::ErrorCode;
using fencelock::storage::NodeStatus;
using fencelock::storage::OperationKind;
using fencelock::storage::OperationReport;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<NodeStatus> three_nodes() {
  return {
      {"10.0.0.1:6379", true, false, 120, 2, 1, 0},
      {"10.0.0.2:6379", true, true, 80, 0, 0, 1},
      {"10.0.0.3:6379", false, false, 5, 1, 4, 3},
  };
}

OperationReport report(OperationKind kind, std::optional<ErrorCode> error,
                       std::chrono::steady_clock::duration elapsed = 1ms,
                       std::chrono::steady_clock::duration token_draw = 0ns) {
  OperationReport r{kind, error, elapsed, 1, {}, token_draw};
  return r;
}

}  // namespace

TEST_CASE("route labels are the fixed names of API v1", "[service]") {
  const auto [route, label] = GENERATE(table<Route, std::string>({
      {Route::kAcquire, "acquire"},
      {Route::kExtend, "extend"},
      {Route::kRelease, "release"},
      {Route::kLockStatus, "lock_status"},
      {Route::kNextToken, "next_token"},
      {Route::kCurrentToken, "current_token"},
      {Route::kHealthz, "healthz"},
      {Route::kReadyz, "readyz"},
      {Route::kMetrics, "metrics"},
      {Route::kOpenApi, "openapi"},
      {Route::kAcquireSet, "acquire_set"},
      {Route::kExtendSet, "extend_set"},
      {Route::kReleaseSet, "release_set"},
      {Route::kAcquirePermit, "acquire_permit"},
      {Route::kExtendPermit, "extend_permit"},
      {Route::kReleasePermit, "release_permit"},
      {Route::kSemaphoreStatus, "semaphore_status"},
      {Route::kNotFound, "not_found"},
  }));
  CHECK(route_label(route) == label);
}

TEST_CASE("a finished request is counted under its route and status", "[service]") {
  Metrics metrics;
  metrics.record_request(Route::kAcquire, 200, 1ms);
  metrics.record_request(Route::kAcquire, 200, 2ms);
  metrics.record_request(Route::kAcquire, 409, 1ms);
  metrics.record_request(Route::kHealthz, 200, 10us);
  metrics.record_request(Route::kNotFound, 404, 10us);
  metrics.record_request(Route::kRelease, 418, 10us);
  metrics.record_request(Route::kRelease, 502, 10us);

  const Exposition text = parse(metrics.render({}));
  REQUIRE(text.errors.empty());
  const std::string name = "fencelock_http_requests_total";
  CHECK(text.value(name, {{"route", "acquire"}, {"status", "200"}}) == 2);
  CHECK(text.value(name, {{"route", "acquire"}, {"status", "409"}}) == 1);
  CHECK(text.value(name, {{"route", "healthz"}, {"status", "200"}}) == 1);
  CHECK(text.value(name, {{"route", "not_found"}, {"status", "404"}}) == 1);
  SECTION("a status outside the fixed table is counted as other") {
    CHECK(text.value(name, {{"route", "release"}, {"status", "other"}}) == 2);
  }
  SECTION("a route and status pair that never happened is not rendered") {
    CHECK_FALSE(text.has(name, {{"route", "extend"}, {"status", "200"}}));
    CHECK(text.count_of(name) == 5);
  }
  SECTION("its duration is observed into the route's histogram") {
    const std::string h = "fencelock_http_request_duration_seconds";
    CHECK(text.value(h + "_count", {{"route", "acquire"}}) == 3);
    CHECK(text.value(h + "_sum", {{"route", "acquire"}}) == Approx(0.004));
    CHECK(text.value(h + "_count", {{"route", "extend"}}) == 0);
  }
}

TEST_CASE("a histogram's buckets are cumulative and its count is the number of observations",
          "[service]") {
  LatencyBuckets buckets;
  buckets.observe(50us);   // le 0.0001
  buckets.observe(100us);  // le 0.0001: a bound is inclusive
  buckets.observe(101us);  // le 0.00025
  buckets.observe(3ms);    // le 0.005
  buckets.observe(10s);    // le 10
  buckets.observe(20s);    // +Inf only
  buckets.observe(-5ms);   // counted as zero

  const LatencyBuckets::Snapshot s = buckets.snapshot();
  CHECK(s.count == 7);
  CHECK(s.cumulative.back() == 7);
  CHECK(s.sum_seconds == Approx(0.00005 + 0.0001 + 0.000101 + 0.003 + 10 + 20));
  CHECK(s.cumulative[0] == 3);   // 0.0001
  CHECK(s.cumulative[1] == 4);   // 0.00025
  CHECK(s.cumulative[4] == 4);   // 0.0025
  CHECK(s.cumulative[5] == 5);   // 0.005
  CHECK(s.cumulative[14] == 5);  // 5
  CHECK(s.cumulative[15] == 6);  // 10
  for (std::size_t i = 1; i < LatencyBuckets::kBucketCount; ++i) {
    CHECK(s.cumulative[i] >= s.cumulative[i - 1]);
  }

  SECTION("bounds ascend and their labels are the seconds they stand for") {
    for (std::size_t i = 0; i < LatencyBuckets::kBoundCount; ++i) {
      const double seconds = std::chrono::duration<double>(LatencyBuckets::upper_bound(i)).count();
      CHECK(std::strtod(std::string(LatencyBuckets::le_label(i)).c_str(), nullptr) ==
            Approx(seconds));
      if (i > 0) CHECK(LatencyBuckets::upper_bound(i) > LatencyBuckets::upper_bound(i - 1));
    }
    CHECK(LatencyBuckets::le_label(LatencyBuckets::kBoundCount) == "+Inf");
  }

  SECTION("rendered, the buckets ascend by le and end with +Inf equal to _count") {
    Metrics metrics;
    for (const auto d : {50us, 100us, 101us, 3'000us, 10'000'000us, 20'000'000us}) {
      metrics.record_request(Route::kExtend, 200, d);
    }
    const Exposition text = parse(metrics.render({}));
    REQUIRE(text.errors.empty());
    std::vector<std::pair<double, double>> rendered;  // le, count
    for (const Sample& sample : text.samples) {
      if (sample.name != "fencelock_http_request_duration_seconds_bucket") continue;
      if (sample.labels.at("route") != "extend") continue;
      rendered.emplace_back(*parse_value(sample.labels.at("le")), sample.value);
    }
    REQUIRE(rendered.size() == LatencyBuckets::kBucketCount);
    for (std::size_t i = 1; i < rendered.size(); ++i) {
      CHECK(rendered[i].first > rendered[i - 1].first);
      CHECK(rendered[i].second >= rendered[i - 1].second);
    }
    CHECK(rendered.front().second == 2);
    CHECK(rendered.back().second == 6);
    CHECK(text.value("fencelock_http_request_duration_seconds_count", {{"route", "extend"}}) == 6);
  }
}

TEST_CASE("an acquire is counted under the outcome its error names", "[service]") {
  const auto [error, outcome] = GENERATE(table<std::optional<ErrorCode>, std::string>({
      {std::nullopt, "granted"},
      {ErrorCode::kLocked, "locked"},
      {ErrorCode::kUnavailable, "unavailable"},
      {ErrorCode::kInvalidArgument, "invalid"},
      {ErrorCode::kInternal, "internal"},
      {ErrorCode::kLeaseLost, "internal"},
      {ErrorCode::kPermitsMismatch, "permits_mismatch"},
  }));
  Metrics metrics;
  metrics.on_operation(report(OperationKind::kAcquire, error, 7ms));

  const Exposition text = parse(metrics.render({}));
  REQUIRE(text.errors.empty());
  for (const std::string o :
       {"granted", "locked", "unavailable", "invalid", "internal", "permits_mismatch"}) {
    INFO("outcome " << o);
    CHECK(text.value("fencelock_acquire_total", {{"outcome", o}}) == (o == outcome ? 1 : 0));
  }
  CHECK(text.value("fencelock_acquire_duration_seconds_count") == 1);
  CHECK(text.value("fencelock_acquire_duration_seconds_sum") == Approx(0.007));
  CHECK(text.value("fencelock_acquire_duration_seconds_bucket", {{"le", "0.005"}}) == 0);
  CHECK(text.value("fencelock_acquire_duration_seconds_bucket", {{"le", "0.01"}}) == 1);
}

TEST_CASE("a token draw is timed whenever the acquire spent time drawing", "[service]") {
  Metrics metrics;
  metrics.on_operation(report(OperationKind::kAcquire, std::nullopt, 3ms, 400us));
  metrics.on_operation(report(OperationKind::kAcquire, ErrorCode::kUnavailable, 9ms, 2ms));
  metrics.on_operation(report(OperationKind::kAcquire, ErrorCode::kLocked, 1ms, 0ns));

  const Exposition text = parse(metrics.render({}));
  REQUIRE(text.errors.empty());
  CHECK(text.value("fencelock_token_draw_duration_seconds_count") == 2);
  CHECK(text.value("fencelock_token_draw_duration_seconds_sum") == Approx(0.0024));
  CHECK(text.value("fencelock_acquire_duration_seconds_count") == 3);
}

TEST_CASE("extend, release and inspect are counted per operation and outcome", "[service]") {
  const auto [kind, operation] = GENERATE(table<OperationKind, std::string>({
      {OperationKind::kExtend, "extend"},
      {OperationKind::kRelease, "release"},
      {OperationKind::kInspect, "inspect"},
  }));
  const auto [error, outcome] = GENERATE(table<std::optional<ErrorCode>, std::string>({
      {std::nullopt, "ok"},
      {ErrorCode::kLeaseLost, "lease_lost"},
      {ErrorCode::kUnavailable, "unavailable"},
      {ErrorCode::kInvalidArgument, "invalid"},
      {ErrorCode::kInternal, "internal"},
      {ErrorCode::kLocked, "internal"},
  }));
  Metrics metrics;
  metrics.on_operation(report(kind, error));
  metrics.on_operation(report(kind, error));

  const Exposition text = parse(metrics.render({}));
  REQUIRE(text.errors.empty());
  // A release that finds its lease gone answers released:false: its own outcome, not_held.
  const std::string label =
      kind == OperationKind::kRelease && outcome == "lease_lost" ? "not_held" : outcome;
  CHECK(text.value("fencelock_lock_operations_total",
                   {{"operation", operation}, {"outcome", label}}) == 2);
  CHECK_FALSE(text.has("fencelock_lock_operations_total",
                       {{"operation", "release"}, {"outcome", "lease_lost"}}));
  double total = 0;
  for (const Sample& s : text.samples) {
    if (s.name == "fencelock_lock_operations_total") total += s.value;
  }
  CHECK(total == 2);
  CHECK(text.count_of("fencelock_lock_operations_total") == 15);
  CHECK(text.value("fencelock_acquire_duration_seconds_count") == 0);
}

TEST_CASE("node series come from the statuses at scrape time and the observed transitions",
          "[service]") {
  Metrics metrics;
  metrics.on_node_up(0, "10.0.0.1:6379", "run-a");
  metrics.on_node_up(1, "10.0.0.2:6379", "run-b");
  metrics.on_node_down(1, "10.0.0.2:6379", "connection reset");
  metrics.on_node_up(1, "10.0.0.2:6379", "run-c");
  metrics.on_node_quarantined(1, "10.0.0.2:6379", 5000ms);
  metrics.on_node_down(2, "10.0.0.3:6379", "timeout");
  metrics.on_node_up(40, "beyond the limit", "ignored");

  const Exposition text = parse(metrics.render(three_nodes()));
  REQUIRE(text.errors.empty());
  const Labels n1{{"node", "10.0.0.1:6379"}}, n2{{"node", "10.0.0.2:6379"}},
      n3{{"node", "10.0.0.3:6379"}};
  CHECK(text.value("fencelock_node_up", n1) == 1);
  CHECK(text.value("fencelock_node_up", n3) == 0);
  CHECK(text.value("fencelock_node_quarantined", n1) == 0);
  CHECK(text.value("fencelock_node_quarantined", n2) == 1);
  CHECK(text.value("fencelock_node_commands_total", n1) == 120);
  CHECK(text.value("fencelock_node_errors_total", n3) == 1);
  CHECK(text.value("fencelock_node_timeouts_total", n3) == 4);
  CHECK(text.value("fencelock_node_disconnects_total", n2) == 1);
  const std::string t = "fencelock_node_transitions_total";
  CHECK(text.value(t, {{"node", "10.0.0.1:6379"}, {"direction", "up"}}) == 1);
  CHECK(text.value(t, {{"node", "10.0.0.1:6379"}, {"direction", "down"}}) == 0);
  CHECK(text.value(t, {{"node", "10.0.0.2:6379"}, {"direction", "up"}}) == 2);
  CHECK(text.value(t, {{"node", "10.0.0.2:6379"}, {"direction", "down"}}) == 1);
  CHECK(text.value(t, {{"node", "10.0.0.3:6379"}, {"direction", "down"}}) == 1);
  CHECK(text.count_of(t) == 6);
  CHECK(text.value("fencelock_node_quarantines_total", n2) == 1);
  CHECK(text.value("fencelock_node_quarantines_total", n1) == 0);

  SECTION("with no nodes, the node families are declared but have no samples") {
    const Exposition empty = parse(metrics.render({}));
    REQUIRE(empty.errors.empty());
    CHECK(empty.types.at("fencelock_node_up") == "gauge");
    CHECK(empty.count_of("fencelock_node_up") == 0);
    CHECK(empty.count_of(t) == 0);
  }
}

TEST_CASE("label values escape backslash, double quote and newline", "[service]") {
  Metrics metrics;
  metrics.on_node_up(0, "", "");
  const std::vector<NodeStatus> nodes{{"we\"ird\\host\nname:6379", true, false, 1, 0, 0, 0}};
  const std::string out = metrics.render(nodes);

  CHECK(out.find("fencelock_node_up{node=\"we\\\"ird\\\\host\\nname:6379\"} 1\n") !=
        std::string::npos);
  const Exposition text = parse(out);
  REQUIRE(text.errors.empty());
  CHECK(text.value("fencelock_node_transitions_total",
                   {{"node", "we\"ird\\host\nname:6379"}, {"direction", "up"}}) == 1);
}

TEST_CASE("extra gauges are rendered as their own families and invalid names are skipped",
          "[service]") {
  Metrics metrics;
  const Exposition text = parse(metrics.render({}, {{"fencelock_http_open_connections", 3},
                                                    {"fencelock_ratio", 0.25},
                                                    {"bad name", 1},
                                                    {"9starts_with_digit", 1},
                                                    {"", 1},
                                                    {"fencelock_infinite", kInf}}));
  REQUIRE(text.errors.empty());
  CHECK(text.types.at("fencelock_http_open_connections") == "gauge");
  CHECK(text.value("fencelock_http_open_connections") == 3);
  CHECK(text.value("fencelock_ratio") == 0.25);
  CHECK(text.value("fencelock_infinite") == kInf);
  CHECK(text.types.count("bad") == 0);
  CHECK(text.types.count("9starts_with_digit") == 0);
}

TEST_CASE("an extra metric carries its help text, and a _total name is a counter", "[service]") {
  Metrics metrics;
  const std::string out =
      metrics.render({}, {{"fencelock_things_total", 4, "Things that happened."}});
  CHECK_THAT(out, Catch::Contains("# HELP fencelock_things_total Things that happened.\n"
                                  "# TYPE fencelock_things_total counter\n"
                                  "fencelock_things_total 4\n"));
}

TEST_CASE("build info and the process families are rendered from the running process",
          "[service]") {
  Metrics metrics;
  const Exposition text = parse(metrics.render({}));
  REQUIRE(text.errors.empty());
  CHECK(text.types.at("fencelock_build_info") == "gauge");
  REQUIRE(text.count_of("fencelock_build_info") == 1);
  for (const Sample& s : text.samples) {
    if (s.name != "fencelock_build_info") continue;
    CHECK(s.value == 1);
    CHECK_FALSE(s.labels.at("version").empty());
    CHECK_FALSE(s.labels.at("compiler").empty());
  }
  CHECK(text.types.at("process_cpu_seconds_total") == "counter");
  CHECK(text.value("process_cpu_seconds_total") > 0);
  CHECK(text.value("process_resident_memory_bytes") > 1024 * 1024);
  CHECK(text.value("process_open_fds") >= 3);  // stdin, stdout, stderr at least
  CHECK(text.value("process_max_fds") >= text.value("process_open_fds"));
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  CHECK(text.value("process_start_time_seconds") <= now + 1);
  CHECK(text.value("process_start_time_seconds") > now - 24 * 3600);  // a test run is shorter
}

TEST_CASE("concurrent updates from 8 threads lose nothing", "[service]") {
  constexpr int kThreads = 8;
  constexpr int kRounds = 20000;
  Metrics metrics;
  // All threads start together so their updates interleave rather than run one after another.
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&metrics, &start, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kRounds; ++i) {
        metrics.record_request(i % 2 == 0 ? Route::kAcquire : Route::kRelease, 200, 1ms);
        metrics.on_operation(report(OperationKind::kAcquire,
                                    t % 2 == 0 ? std::optional<ErrorCode>{} : ErrorCode::kLocked,
                                    2ms, 100us));
        metrics.on_operation(report(OperationKind::kRelease, std::nullopt));
        metrics.on_node_up(static_cast<std::size_t>(t % 3), "", "");
      }
    });
  }
  // A scrape in the middle must still parse.
  const Exposition during = parse(metrics.render(three_nodes()));
  for (auto& thread : threads) thread.join();
  CHECK(during.errors.empty());

  const Exposition text = parse(metrics.render(three_nodes()));
  REQUIRE(text.errors.empty());
  constexpr double kTotal = kThreads * kRounds;
  CHECK(text.value("fencelock_http_requests_total", {{"route", "acquire"}, {"status", "200"}}) ==
        kTotal / 2);
  CHECK(text.value("fencelock_http_requests_total", {{"route", "release"}, {"status", "200"}}) ==
        kTotal / 2);
  CHECK(text.value("fencelock_http_request_duration_seconds_count", {{"route", "acquire"}}) ==
        kTotal / 2);
  CHECK(text.value("fencelock_acquire_total", {{"outcome", "granted"}}) == kTotal / 2);
  CHECK(text.value("fencelock_acquire_total", {{"outcome", "locked"}}) == kTotal / 2);
  CHECK(text.value("fencelock_acquire_duration_seconds_count") == kTotal);
  CHECK(text.value("fencelock_acquire_duration_seconds_sum") == Approx(kTotal * 0.002));
  CHECK(text.value("fencelock_token_draw_duration_seconds_count") == kTotal);
  CHECK(text.value("fencelock_lock_operations_total",
                   {{"operation", "release"}, {"outcome", "ok"}}) == kTotal);
  double ups = 0;
  for (const Sample& s : text.samples) {
    if (s.name == "fencelock_node_transitions_total" && s.labels.at("direction") == "up") {
      ups += s.value;
    }
  }
  CHECK(ups == kTotal);
}

TEST_CASE("the whole output parses as the text format with HELP and TYPE before every family",
          "[service]") {
  Metrics metrics;
  metrics.record_request(Route::kLockStatus, 200, 3ms);
  metrics.record_request(Route::kMetrics, 200, 1ms);
  metrics.on_operation(report(OperationKind::kAcquire, std::nullopt, 5ms, 1ms));
  metrics.on_operation(report(OperationKind::kInspect, ErrorCode::kUnavailable));
  metrics.on_node_down(0, "10.0.0.1:6379", "gone");

  const Exposition text =
      parse(metrics.render(three_nodes(), {{"fencelock_http_open_connections", 2}}));
  INFO([&] {
    std::string all;
    for (const auto& e : text.errors) all += e + "\n";
    return all;
  }());
  CHECK(text.errors.empty());
  const std::map<std::string, std::string> expected{
      {"fencelock_http_requests_total", "counter"},
      {"fencelock_http_request_duration_seconds", "histogram"},
      {"fencelock_acquire_total", "counter"},
      {"fencelock_acquire_duration_seconds", "histogram"},
      {"fencelock_token_draw_duration_seconds", "histogram"},
      {"fencelock_lock_operations_total", "counter"},
      {"fencelock_node_up", "gauge"},
      {"fencelock_node_quarantined", "gauge"},
      {"fencelock_node_commands_total", "counter"},
      {"fencelock_node_errors_total", "counter"},
      {"fencelock_node_timeouts_total", "counter"},
      {"fencelock_node_disconnects_total", "counter"},
      {"fencelock_node_transitions_total", "counter"},
      {"fencelock_node_quarantines_total", "counter"},
      {"fencelock_node_resolve_failures_total", "counter"},
      {"fencelock_node_address_changes_total", "counter"},
      {"fencelock_http_open_connections", "gauge"},
      {"fencelock_build_info", "gauge"},
      {"process_cpu_seconds_total", "counter"},
      {"process_resident_memory_bytes", "gauge"},
      {"process_open_fds", "gauge"},
      {"process_max_fds", "gauge"},
      {"process_start_time_seconds", "gauge"},
  };
  CHECK(text.types == expected);
  for (const Sample& s : text.samples) {
    if (text.types.at(family_of(s.name, text.types)) == "histogram") continue;
    INFO(s.name);
    CHECK(s.labels.count("le") == 0);
  }
}
