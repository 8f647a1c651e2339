#include "cluster.h"

#include <csignal>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <thread>

#include "http_client.h"

namespace fencelock::faults {

namespace {

void write_clock(const std::filesystem::path& file, std::int64_t offset_ms,
                 std::int64_t drift_ppm) {
  std::ofstream(file, std::ios::trunc) << offset_ms << ' ' << drift_ppm << '\n';
}

std::filesystem::path node_clock_file(const std::filesystem::path& dir, std::size_t i) {
  return dir / ("node" + std::to_string(i) + ".clock");
}

std::filesystem::path instance_clock_file(const std::filesystem::path& dir, std::size_t i) {
  return dir / ("instance" + std::to_string(i) + ".clock");
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The state letter of /proc/PID/stat ('T' = stopped), or '?' if unreadable.
char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto paren = stat.rfind(')');  // the command name may hold spaces and parentheses
  return paren != std::string::npos && paren + 2 < stat.size() ? stat[paren + 2] : '?';
}

}  // namespace

Cluster::Cluster(ClusterSettings settings) : settings_(std::move(settings)) {
  const std::string shim = settings_.bin_dir + "/tests/libfencelock_clock_shim.so";
  for (std::size_t i = 0; i < settings_.nodes; ++i) {
    write_clock(node_clock_file(dir(), i), 0, 0);
    auto node = std::make_unique<testing::RedisServer>(dir() / ("node" + std::to_string(i)),
                                                       i < settings_.durable_nodes
                                                           ? testing::Persistence::kAofAlways
                                                           : testing::Persistence::kNone);
    node->set_environment(
        {"LD_PRELOAD=" + shim, "FENCELOCK_CLOCK_FILE=" + node_clock_file(dir(), i).string()});
    nodes_.push_back(std::move(node));
  }
  counter_ =
      std::make_unique<testing::RedisServer>(dir() / "counter", testing::Persistence::kAofAlways);
  if (settings_.token_source == "etcd") etcd_ = std::make_unique<testing::EtcdCluster>(3);
  settings_.instance_specs.resize(settings_.instances);
  serving_ = 0;
  while (serving_ < settings_.instances && settings_.instance_specs[serving_].serving) ++serving_;
  for (std::size_t i = serving_; i < settings_.instances; ++i) {
    if (settings_.instance_specs[i].serving)
      throw std::logic_error("serving instances must come before the others");
  }
  for (auto& node : nodes_) node->spawn();
  counter_->spawn();
  for (auto& node : nodes_) {
    try {
      node->wait_ready();
    } catch (const std::runtime_error&) {
      node->start();  // the picked port was taken meanwhile: another one
    }
  }
  try {
    counter_->wait_ready();
  } catch (const std::runtime_error&) {
    counter_->start();
  }

  std::uint64_t seed = settings_.seed;
  links_.resize(settings_.instances);
  for (std::size_t i = 0; i < settings_.instances; ++i) {
    for (std::size_t j = 0; j < settings_.nodes; ++j) {
      links_[i].push_back(std::make_unique<FaultProxy>(nodes_[j]->port(), ++seed));
    }
    write_clock(instance_clock_file(dir(), i), 0, 0);
    ports_.slots.push_back(std::make_unique<std::atomic<std::uint16_t>>(0));
  }
  instances_.resize(settings_.instances);
  instance_paused_.assign(settings_.instances, false);
  for (std::size_t i = 0; i < settings_.instances; ++i) {
    if (!spec(i).spare) start_instance(i);
  }

  store_port_ = testing::pick_free_port();
  store_.start({settings_.bin_dir + "/examples/resource-store", "--listen",
                "127.0.0.1:" + std::to_string(store_port_), "--db", (dir() / "store.db").string(),
                "--log", (dir() / "store.ops.log").string(), "--mode", settings_.store_mode},
               dir() / "store.out");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (testing::HttpClient(store_port_, std::chrono::milliseconds(500)).get("/healthz").status !=
         200) {
    if (std::chrono::steady_clock::now() > deadline || store_.poll_exit()) {
      throw std::runtime_error("resource-store did not start: " + read_file(dir() / "store.out"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Ready, not only up: a fresh instance refuses grants until its registry found the nodes bound
  // to its token store (a few ms), which would show as 503s in a calm history.
  // A stray instance or an outsider need not become ready: they only have to be up.
  for (std::size_t i = 0; i < instances_.size(); ++i) {
    if (spec(i).spare) continue;
    while (testing::HttpClient(instance_port(i), std::chrono::milliseconds(500))
               .get(stray(i) || i >= serving_ ? "/healthz" : "/readyz")
               .status != 200) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("fencelockd " + std::to_string(i) + " never became ready:\n" +
                                 instance_log(i));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

Cluster::~Cluster() {
  // Every instance, whatever its flag: a failpoint armed by a late SIGUSR2 may have stopped one
  // after pause_instance_after_next_grant() gave up (SIGCONT to a running process does nothing).
  for (std::size_t i = 0; i < instances_.size(); ++i) {
    if (instances_[i]) ::kill(instances_[i]->pid(), SIGCONT);
  }
  instances_.clear();  // before the proxies and nodes they talk to
  links_.clear();
  store_.kill();
}

const InstanceSpec& Cluster::spec(std::size_t i) const {
  return settings_.instance_specs.at(i);
}

std::filesystem::path Cluster::token_file(std::size_t i) const {
  const std::string& own = spec(i).tokens;
  if (own.starts_with("sqlite:")) return own.substr(7);
  return dir() / ("tokens" + std::to_string(i) + ".db");
}

std::vector<std::string> Cluster::instance_args(std::size_t i) const {
  std::string redis;
  for (const auto& link : links_[i]) redis += (redis.empty() ? "" : ",") + link->address();
  std::vector<std::string> tokens{"--tokens", "redis://" + counter_->address(),
                                  "--token-epoch-file",
                                  (dir() / ("epoch" + std::to_string(i))).string()};
  if (settings_.token_source == "sqlite") {
    tokens = {"--tokens", "sqlite:" + token_file(i).string()};
  } else if (settings_.token_source == "etcd") {
    std::string endpoints;
    for (const std::string& e : etcd_->endpoints()) endpoints += (endpoints.empty() ? "" : ",") + e;
    tokens = {"--tokens", "etcd://" + endpoints + "?prefix=campaign/", "--token-timeout", "1s"};
  }
  if (!spec(i).tokens.empty()) tokens = {"--tokens", spec(i).tokens};
  if (stray(i)) {
    tokens = {"--tokens", "sqlite:" + (dir() / ("stray" + std::to_string(i) + ".db")).string()};
  }
  std::vector<std::string> args{"--redis", redis};
  args.insert(args.end(), tokens.begin(), tokens.end());
  if (!spec(i).key_prefix.empty()) {
    args.insert(args.end(), {"--key-prefix", spec(i).key_prefix});
  }
  const std::vector<std::string> rest{
      "--max-ttl",
      std::to_string((i < settings_.instance_max_ttl.size() ? settings_.instance_max_ttl[i]
                                                            : settings_.max_ttl)
                         .count()) +
          "ms",
      "--quarantine",
      spec(i).quarantine.value_or(settings_.quarantine) ? "on" : "off",
      "--max-wait",
      "10s",
      "--retry-delay",
      "100ms",
      "--retry-jitter",
      "50ms",
      "--shutdown-grace",
      "0s"};
  args.insert(args.end(), rest.begin(), rest.end());
  return args;
}

void Cluster::start_instance(std::size_t i) {
  if (instances_.at(i)) return;
  const std::string shim = settings_.bin_dir + "/tests/libfencelock_clock_shim.so";
  instances_[i] = std::make_unique<testing::Fencelockd>(
      dir(), instance_args(i),
      std::vector<std::string>{"LD_PRELOAD=" + shim,
                               "FENCELOCK_CLOCK_FILE=" + instance_clock_file(dir(), i).string(),
                               "FENCELOCK_FAILPOINTS=pause-after-quorum"});
  instance_paused_[i] = false;
  ports_.at(i) = instances_[i]->port();
}

void Cluster::kill_instance(std::size_t i) {
  if (!instances_.at(i)) return;
  ports_.at(i) = 0;
  instances_[i]->stop(SIGKILL, std::chrono::seconds(5));
  instances_[i].reset();
  instance_paused_[i] = false;
}

void Cluster::stop_instance(std::size_t i) {
  if (!instances_.at(i)) return;
  ports_.at(i) = 0;
  ::kill(instances_[i]->pid(), SIGCONT);  // a stopped process would not see SIGTERM
  instances_[i]->stop(SIGTERM, std::chrono::seconds(5));
  instances_[i].reset();
  instance_paused_[i] = false;
}

void Cluster::pause_instance(std::size_t i) {
  if (!instances_.at(i) || instance_paused_[i]) return;
  ::kill(instances_[i]->pid(), SIGSTOP);
  instance_paused_[i] = true;
}

bool Cluster::pause_instance_after_next_grant(std::size_t i, std::chrono::milliseconds wait) {
  if (!instances_.at(i) || instance_paused_[i]) return false;
  const pid_t pid = instances_[i]->pid();
  ::kill(pid, SIGUSR2);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < deadline) {
    if (process_state(pid) == 'T') {
      instance_paused_[i] = true;
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

void Cluster::resume_instance(std::size_t i) {
  if (!instances_.at(i)) return;  // sent even when not flagged paused: see ~Cluster()
  ::kill(instances_[i]->pid(), SIGCONT);
  instance_paused_[i] = false;
}

void Cluster::set_node_clock(std::size_t i, std::int64_t offset_ms, std::int64_t drift_ppm) {
  write_clock(node_clock_file(dir(), i), offset_ms, drift_ppm);
}

void Cluster::set_instance_clock(std::size_t i, std::int64_t offset_ms) {
  write_clock(instance_clock_file(dir(), i), offset_ms, 0);
}

std::string Cluster::instance_log(std::size_t i) const {
  return instances_.at(i) ? instances_[i]->log() : "";
}

std::string Cluster::store_log() const {
  return read_file(dir() / "store.ops.log");
}

void Cluster::heal() {
  for (auto& per_instance : links_) {
    for (auto& link : per_instance) link->heal();
  }
  for (auto& node : nodes_) {
    if (node->paused()) node->resume();
    if (!node->running()) node->start();
  }
  if (counter_->paused()) counter_->resume();
  if (!counter_->running()) counter_->start();
  if (etcd_) {
    for (std::size_t m = 0; m < etcd_->size(); ++m) {
      if (!etcd_->running(m)) etcd_->start(m);
    }
  }
  for (std::size_t i = 0; i < instances_.size(); ++i) {
    resume_instance(i);
    if (spec(i).spare) {
      stop_instance(i);
    } else {
      start_instance(i);
    }
  }
}

}  // namespace fencelock::faults
