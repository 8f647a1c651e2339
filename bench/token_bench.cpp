// token_bench: fencing-token draws per second, closed loop, C concurrent callers on one name.
//
//   token_bench [--source sqlite|redis|both|etcd] [--callers 1,64] [--seconds 3] [--names 1]
//               [--etcd 127.0.0.1:2379]
//
// sqlite: a fresh file in a temp dir (default reserve block 1000). redis: its own redis-server
// with appendonly yes + appendfsync always (what the source insists on). etcd: the member(s) at
// --etcd, started by the caller (bench/peers/etcd/start-etcd.sh), keys under a fresh prefix.
// Markdown rows on stdout.
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cstdio>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fencelock/storage/etcd_token_source.h"
#include "fencelock/storage/redis_token_source.h"
#include "fencelock/storage/sqlite_token_source.h"
#include "latency_histogram.h"
#include "redis_cluster.h"
#include "temp_dir.h"

namespace {

using namespace fencelock;
using Clock = std::chrono::steady_clock;

struct Round {
  std::uint64_t draws = 0, failed = 0;
  bench::LatencyHistogram latency;
};

// One caller: draw → draw → ... ; every step goes through the io_context so that a source that
// answers synchronously (SQLite with tokens in memory) cannot recurse.
class Caller : public std::enable_shared_from_this<Caller> {
 public:
  Caller(boost::asio::io_context& io, storage::TokenSource& source, Round& round,
         Clock::time_point end, int names, unsigned seed)
      : io_(io), source_(source), round_(round), end_(end), names_(names), rng_(seed) {}
  void next() {
    if (Clock::now() >= end_) return;
    const auto started = Clock::now();
    source_.next("bench-" + std::to_string(rng_() % static_cast<unsigned>(names_)),
                 [self = shared_from_this(), started](storage::Result<std::uint64_t> token) {
                   boost::asio::post(self->io_, [self, started, ok = token.ok()] {
                     self->round_.latency.record(Clock::now() - started);
                     ++(ok ? self->round_.draws : self->round_.failed);
                     self->next();
                   });
                 });
  }

 private:
  boost::asio::io_context& io_;
  storage::TokenSource& source_;
  Round& round_;
  Clock::time_point end_;
  int names_;
  std::mt19937 rng_;
};

void run(const char* label, storage::TokenSource& source, boost::asio::io_context& io,
         const std::vector<int>& callers, int seconds, int names) {
  for (const int c : callers) {
    Round round;
    const auto started = Clock::now();
    const auto end = started + std::chrono::seconds(seconds);
    for (int i = 0; i < c; ++i)
      std::make_shared<Caller>(io, source, round, end, names, static_cast<unsigned>(i + 1))->next();
    io.restart();
    {
      // Answers may come from another thread (SQLite's worker): keep the loop alive meanwhile.
      auto work = boost::asio::make_work_guard(io);
      io.run_until(end);
    }
    io.run_for(std::chrono::seconds(1));  // the last draws in flight
    const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
    std::printf("| %s | %d | %.0f | %lld µs | %lld µs | %lld µs | %llu |\n", label, c,
                static_cast<double>(round.draws) / elapsed,
                static_cast<long long>(round.latency.quantile(0.5).count()),
                static_cast<long long>(round.latency.quantile(0.99).count()),
                static_cast<long long>(round.latency.quantile(0.999).count()),
                static_cast<unsigned long long>(round.failed));
    std::fflush(stdout);
  }
}

std::vector<int> split_ints(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) out.push_back(std::stoi(part));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string which = "both";
  std::vector<int> callers = {1, 64};
  int seconds = 3;
  int names = 1;
  std::string etcd;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--source")
      which = value;
    else if (flag == "--callers")
      callers = split_ints(value);
    else if (flag == "--seconds")
      seconds = std::stoi(value);
    else if (flag == "--names")
      names = std::stoi(value);
    else if (flag == "--etcd")
      etcd = value;
    else {
      std::fprintf(stderr, "token_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  std::printf(
      "| source | callers | draws/s | p50 | p99 | p99.9 | failed "
      "|\n|---|---:|---:|---:|---:|---:|---:|\n");
  testing::TempDir dir;
  if (which == "sqlite" || which == "both") {
    boost::asio::io_context io(1);
    storage::SqliteTokenOptions options;
    options.path = dir.path() / "tokens.db";
    auto source = storage::SqliteTokenSource::open(options).value();
    run("sqlite", *source, io, callers, seconds, names);
  }
  if (which == "redis" || which == "both") {
    testing::RedisCluster master(1, testing::Persistence::kAofAlways);
    boost::asio::io_context io(1);
    storage::RedisTokenOptions options;
    options.master = storage::parse_node_address(master.addresses()[0]).value();
    options.epoch_file = dir.path() / "epoch";
    auto source = storage::RedisTokenSource::create(io.get_executor(), options).value();
    while (source->epoch() < 0) io.run_for(std::chrono::milliseconds(5));
    run("redis INCR", *source, io, callers, seconds, names);
    source->stop();
    io.restart();
    io.run_for(std::chrono::milliseconds(500));
  }
  if (which == "etcd") {
    boost::asio::io_context io(1);
    storage::EtcdTokenOptions options;
    options.endpoints.push_back(storage::parse_node_address(etcd).value());
    options.key_prefix = "token-bench/" + std::to_string(std::random_device{}()) + "/";
    auto source = storage::EtcdTokenSource::create(io.get_executor(), options);
    if (!source.ok()) {
      std::fprintf(stderr, "token_bench: etcd at %s: %s\n", etcd.c_str(),
                   source.error().message.c_str());
      return 1;
    }
    run("etcd", **source, io, callers, seconds, names);
    (*source)->stop();
    io.restart();
    io.run_for(std::chrono::milliseconds(500));
  }
  return 0;
}
