// engine_bench: the Redlock engine in-process (no HTTP, no token), against real local
// redis-servers — fencelock's ceiling. Closed loop, C callers:
//   uncontended (default)  each acquires a random name out of --names and releases it as soon as
//                          it is granted (ops = pairs)
//   contended              every caller on one name with --wait-ms, holds it --hold-ms, releases
//                          (ops = hand-offs; handoff_* = time from a release's answer to the next
//                          grant; "refused" = acquires that gave up)
//
//   engine_bench [--workload uncontended|contended] [--nodes 5] [--callers 1,16,64,256]
//                [--seconds 5] [--names 10000] [--ttl-ms 10000] [--wait-ms 5000] [--hold-ms 1]
//                [--aof none|always] [--redis HOST:PORT,...] [--json]
//
// Without --redis it starts its own redis-servers on loopback (and stops them). Prints one
// Markdown table row per caller count.
#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fencelock/storage/redlock_engine.h"
#include "latency_histogram.h"
#include "redis_cluster.h"

namespace {

using namespace fencelock;
using Clock = std::chrono::steady_clock;

struct Settings {
  bool contended = false;
  std::chrono::milliseconds wait{5'000};
  std::chrono::milliseconds hold{1};
  std::size_t nodes = 5;
  std::vector<int> callers = {1, 16, 64, 256};
  int seconds = 5;
  int names = 10'000;
  std::chrono::milliseconds ttl{10'000};
  testing::Persistence persistence = testing::Persistence::kNone;
  bool json = false;               // one JSON line per caller count instead of a Markdown table
  std::vector<std::string> redis;  // existing servers; empty: start our own
};

struct RoundResult {
  std::uint64_t pairs = 0;
  std::uint64_t refused = 0;
  std::uint64_t failed = 0;
  std::map<std::string, std::uint64_t> failures;  // by message
  bench::LatencyHistogram acquire;
  bench::LatencyHistogram pair;
  bench::LatencyHistogram handoff;  // contended: a release's answer → the next grant
  Clock::time_point last_release{};
  double seconds = 0;
};

// One closed-loop caller: acquire → (hold) → release → again, until the round ends.
class Caller : public std::enable_shared_from_this<Caller> {
 public:
  Caller(boost::asio::io_context& io, storage::RedlockEngine& engine, RoundResult& result,
         const Settings& settings, Clock::time_point end, unsigned seed)
      : engine_(engine),
        result_(result),
        settings_(settings),
        end_(end),
        rng_(seed),
        hold_timer_(io) {}

  void next() {
    if (Clock::now() >= end_) return;
    const auto started = Clock::now();
    std::string name =
        settings_.contended
            ? std::string("hot")
            : "bench-" + std::to_string(rng_() % static_cast<unsigned>(settings_.names));
    const auto wait = settings_.contended ? settings_.wait : std::chrono::milliseconds(0);
    engine_.acquire({name, settings_.ttl, wait, {}}, [self = shared_from_this(), started,
                                                      name](storage::Result<storage::Lease> lease) {
      self->on_acquired(started, name, std::move(lease));
    });
  }

 private:
  void on_acquired(Clock::time_point started, const std::string& name,
                   storage::Result<storage::Lease> lease) {
    result_.acquire.record(Clock::now() - started);
    if (!lease.ok()) {
      if (lease.error().code == storage::ErrorCode::kLocked) {
        ++result_.refused;
      } else {
        ++result_.failed;
        ++result_.failures[lease.error().message];
      }
      next();
      return;
    }
    if (settings_.contended) {
      const auto now = Clock::now();
      if (result_.last_release != Clock::time_point{})
        result_.handoff.record(now - result_.last_release);
      ++result_.pairs;  // a hand-off
      hold_timer_.expires_after(settings_.hold);
      hold_timer_.async_wait(
          [self = shared_from_this(), started, name,
           claim = storage::LeaseClaim{lease->token, lease->proof, {}}](
              const boost::system::error_code&) { self->release(started, name, claim); });
      return;
    }
    release(started, name, storage::LeaseClaim{lease->token, lease->proof, {}});
  }

  void release(Clock::time_point started, const std::string& name,
               const storage::LeaseClaim& claim) {
    engine_.release(name, claim,
                    [self = shared_from_this(), started](storage::Result<bool> released) {
                      if (self->settings_.contended) {
                        self->result_.last_release = Clock::now();
                      } else if (released.ok()) {
                        ++self->result_.pairs;
                        self->result_.pair.record(Clock::now() - started);
                      }
                      if (!released.ok()) {
                        ++self->result_.failed;
                        ++self->result_.failures["release: " + released.error().message];
                      }
                      self->next();
                    });
  }

  storage::RedlockEngine& engine_;
  RoundResult& result_;
  const Settings& settings_;
  Clock::time_point end_;
  std::mt19937 rng_;
  boost::asio::steady_timer hold_timer_;
};

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) out.push_back(part);
  return out;
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "engine_bench: %s\nsee the comment at the top of bench/engine_bench.cpp\n",
               why);
  std::exit(2);
}

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--json") {  // the one flag without a value
      s.json = true;
      continue;
    }
    if (i + 1 >= argc) usage(("missing value for " + flag).c_str());
    const std::string value = argv[++i];
    if (flag == "--workload") {
      if (value != "uncontended" && value != "contended")
        usage("--workload is uncontended or contended");
      s.contended = value == "contended";
    } else if (flag == "--wait-ms")
      s.wait = std::chrono::milliseconds(std::stol(value));
    else if (flag == "--hold-ms")
      s.hold = std::chrono::milliseconds(std::stol(value));
    else if (flag == "--nodes")
      s.nodes = std::stoul(value);
    else if (flag == "--callers") {
      s.callers.clear();
      for (auto& c : split(value)) s.callers.push_back(std::stoi(c));
    } else if (flag == "--seconds")
      s.seconds = std::stoi(value);
    else if (flag == "--names")
      s.names = std::stoi(value);
    else if (flag == "--ttl-ms")
      s.ttl = std::chrono::milliseconds(std::stol(value));
    else if (flag == "--aof")
      s.persistence =
          value == "always" ? testing::Persistence::kAofAlways : testing::Persistence::kNone;
    else if (flag == "--redis")
      s.redis = split(value);
    else
      usage(("unknown flag " + flag).c_str());
  }
  return s;
}

RoundResult run_round(storage::EngineOptions options, const Settings& settings, int callers) {
  boost::asio::io_context io(1);
  auto engine = storage::RedlockEngine::create(io.get_executor(), std::move(options)).value();
  engine->start();
  // Wait for every node to be connected, and for the registry to let the engine grant, before the
  // clock starts (a fresh engine refuses until its first registry round).
  const auto connect_deadline = Clock::now() + std::chrono::seconds(10);
  while ((engine->voting_nodes() != engine->node_count() || engine->grant_refusal()) &&
         Clock::now() < connect_deadline) {
    io.run_for(std::chrono::milliseconds(5));
  }
  RoundResult result;
  const auto started = Clock::now();
  const auto end = started + std::chrono::seconds(settings.seconds);
  for (int c = 0; c < callers; ++c) {
    std::make_shared<Caller>(io, *engine, result, settings, end, static_cast<unsigned>(c + 1))
        ->next();
  }
  // Contended waiters still queued at the end need up to their wait to drain.
  const auto drain =
      settings.contended ? settings.wait + std::chrono::seconds(1) : std::chrono::seconds(1);
  while (Clock::now() < end + drain && io.run_for(std::chrono::milliseconds(100)) > 0) {
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  engine->stop();
  io.restart();
  io.run_for(std::chrono::seconds(2));
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  const Settings settings = parse(argc, argv);
  std::optional<testing::RedisCluster> cluster;
  std::vector<std::string> addresses = settings.redis;
  if (addresses.empty()) {
    cluster.emplace(settings.nodes, settings.persistence);
    addresses = cluster->addresses();
  }
  storage::EngineOptions options;
  for (const auto& a : addresses) options.nodes.push_back(storage::parse_node_address(a).value());
  // A deployment of its own on --redis nodes: bench/run.sh's fencelockd has bound the default
  // prefix to its SQLite file there, and the nodes refuse every grant to an engine without it.
  options.key_prefix = "engine-bench:lock:";

  if (!settings.json) {
    std::printf(
        "| callers | pairs/s | acquire p50 | acquire p99 | acquire p99.9 | pair p50 | pair p99 | "
        "refused | failed |\n");
    std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  }
  for (const int callers : settings.callers) {
    const RoundResult r = run_round(options, settings, callers);
    auto us = [](std::chrono::microseconds d) { return static_cast<long long>(d.count()); };
    if (settings.json) {
      auto msf = [](std::chrono::microseconds d) {
        return static_cast<double>(d.count()) / 1000.0;
      };
      const double elapsed = std::min(r.seconds, static_cast<double>(settings.seconds) + 1.0);
      std::printf(
          "{\"system\":\"fencelock-engine\",\"workload\":\"%s\",\"callers\":%d,\"seconds\":%d,"
          "\"ops\":%llu,\"ops_per_sec\":%.1f,\"p50_ms\":%.3f,\"p90_ms\":%.3f,\"p99_ms\":%.3f,"
          "\"p999_ms\":%.3f,",
          settings.contended ? "contended" : "uncontended", callers, settings.seconds,
          static_cast<unsigned long long>(r.pairs),
          static_cast<double>(r.pairs) / std::max(elapsed, static_cast<double>(settings.seconds)),
          msf(r.acquire.quantile(0.5)), msf(r.acquire.quantile(0.9)), msf(r.acquire.quantile(0.99)),
          msf(r.acquire.quantile(0.999)));
      if (settings.contended) {
        std::printf("\"handoff_p50_ms\":%.3f,\"handoff_p90_ms\":%.3f,\"handoff_p99_ms\":%.3f,",
                    msf(r.handoff.quantile(0.5)), msf(r.handoff.quantile(0.9)),
                    msf(r.handoff.quantile(0.99)));
      } else {
        std::printf("\"pair_p50_ms\":%.3f,\"pair_p99_ms\":%.3f,", msf(r.pair.quantile(0.5)),
                    msf(r.pair.quantile(0.99)));
      }
      std::printf("\"refused\":%llu,\"errors\":%llu}\n", static_cast<unsigned long long>(r.refused),
                  static_cast<unsigned long long>(r.failed));
      std::fflush(stdout);
      continue;
    }
    std::printf("| %d | %.0f | %lld µs | %lld µs | %lld µs | %lld µs | %lld µs | %llu | %llu |\n",
                callers, static_cast<double>(r.pairs) / r.seconds, us(r.acquire.quantile(0.5)),
                us(r.acquire.quantile(0.99)), us(r.acquire.quantile(0.999)),
                us(r.pair.quantile(0.5)), us(r.pair.quantile(0.99)),
                static_cast<unsigned long long>(r.refused),
                static_cast<unsigned long long>(r.failed));
    for (const auto& [message, count] : r.failures) {
      std::fprintf(stderr, "  %d callers: %llu× %s\n", callers,
                   static_cast<unsigned long long>(count), message.c_str());
    }
    std::fflush(stdout);
  }
  return 0;
}
