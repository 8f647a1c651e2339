// The system under test, all real processes on loopback: N lock nodes (redis-server, each with its
// own wall clock through the clock shim), the token store (a counter master with appendfsync
// always for the Redis source, SQLite files, or a 3-member etcd cluster), K fencelockd instances
// whose every link to a lock node runs through a FaultProxy, and a resource store. Everything lives
// in one temporary directory and is stopped when the Cluster is destroyed — also when a check fails
// or an exception unwinds.
//
// Not thread-safe: the nemesis drives it from one thread; workload threads only read ports
// (instance_port and store_port are safe to call from any thread).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "child_process.h"
#include "etcd_cluster.h"
#include "fault_proxy.h"
#include "fencelockd_process.h"
#include "redis_server.h"
#include "temp_dir.h"

namespace fencelock::faults {

// What one instance runs with that differs from the cluster's settings: operators who start
// instances with other flags or on another store, or a newcomer the nemesis starts and stops.
struct InstanceSpec {
  std::string tokens;              // a --tokens spec of its own; empty: the cluster's source
  std::string key_prefix;          // a --key-prefix of its own; empty: the default
  std::optional<bool> quarantine;  // a --quarantine of its own
  bool serving = true;  // the workload and the probes use it (serving instances come first)
  bool spare = false;   // not started with the cluster; heal() stops it (it is a fault)
};

struct ClusterSettings {
  std::size_t nodes = 5;
  std::size_t instances = 2;
  // Nodes 0 … durable_nodes-1 run `appendonly yes` with `appendfsync always`; the rest none.
  std::size_t durable_nodes = 0;
  // The last `stray_instances` of the instances draw from an embedded SQLite file of their own, as
  // a misconfigured fencelockd would: they must never grant beside the others
  // (instance_registry.h).
  std::size_t stray_instances = 0;
  bool quarantine = true;
  // Where tokens come from: "redis" (the counter master, an epoch file per instance), "sqlite"
  // (instance i on DIR/tokens<i>.db) or "etcd" (a 3-member etcd cluster).
  std::string token_source = "redis";
  // Per instance; missing entries are the defaults.
  std::vector<InstanceSpec> instance_specs;
  std::chrono::milliseconds max_ttl{3000};  // also the quarantine window of a restarted node
  // Per instance, a --max-ttl of its own (operators who start instances with different flags);
  // empty: max_ttl everywhere.
  std::vector<std::chrono::milliseconds> instance_max_ttl;
  std::string store_mode = "fenced";  // resource-store --mode
  std::uint64_t seed = 1;
  std::string bin_dir;  // where fencelockd, resource-store and the clock shim are
};

class Cluster {
 public:
  explicit Cluster(ClusterSettings settings);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  const ClusterSettings& settings() const noexcept { return settings_; }
  const std::filesystem::path& dir() const noexcept { return dir_.path(); }

  // Lock nodes.
  std::size_t node_count() const noexcept { return nodes_.size(); }
  testing::RedisServer& node(std::size_t i) { return *nodes_.at(i); }
  // Sets node i's wall clock: `offset_ms` from the host's, running `drift_ppm` fast.
  void set_node_clock(std::size_t i, std::int64_t offset_ms, std::int64_t drift_ppm = 0);

  // The counter master behind the Redis token source (also started for the other sources: the
  // naive control counter lives there).
  testing::RedisServer& counter() { return *counter_; }
  // The etcd cluster behind the etcd token source; only with token_source "etcd".
  testing::EtcdCluster& etcd() { return *etcd_; }
  // Instance i's SQLite token file with token_source "sqlite" (its spec's own file if it has one).
  std::filesystem::path token_file(std::size_t i) const;

  // fencelockd instances. A port of 0 means the instance is down.
  std::size_t instance_count() const noexcept { return instances_.size(); }
  // Instances 0 … serving_count()-1 serve the workload and the probes; the rest are outsiders
  // the nemesis starts and stops (another deployment, other flags).
  std::size_t serving_count() const noexcept { return serving_; }
  const InstanceSpec& spec(std::size_t i) const;
  bool stray(std::size_t i) const noexcept {
    return i + settings_.stray_instances >= settings_.instances;
  }
  std::uint16_t instance_port(std::size_t i) const noexcept { return ports_.at(i).load(); }
  void kill_instance(std::size_t i);
  void stop_instance(std::size_t i);  // SIGTERM: a clean stop
  void start_instance(std::size_t i);
  void pause_instance(std::size_t i);
  void resume_instance(std::size_t i);
  // Arms instance i's failpoint (SIGUSR2, fencelock/storage/failpoints.h) and waits up to `wait`
  // for it to stop itself between a grant's quorum and its answer; true if it did (it is then
  // paused, as after pause_instance).
  bool pause_instance_after_next_grant(std::size_t i, std::chrono::milliseconds wait);
  void set_instance_clock(std::size_t i, std::int64_t offset_ms);
  std::string instance_log(std::size_t i) const;

  // The link from instance i to node j.
  FaultProxy& link(std::size_t instance, std::size_t node) { return *links_.at(instance).at(node); }

  // Resource store.
  std::uint16_t store_port() const noexcept { return store_port_; }
  std::string store_log() const;

  // Ends every fault: links healthy, paused processes resumed, stopped ones started (spare
  // instances stopped cleanly). Clocks stay where they are (moving one back is a fault of its
  // own).
  void heal();

 private:
  std::vector<std::string> instance_args(std::size_t i) const;

  ClusterSettings settings_;
  testing::TempDir dir_;  // first: removed last, after every process is gone
  std::vector<std::unique_ptr<testing::RedisServer>> nodes_;
  std::unique_ptr<testing::RedisServer> counter_;
  std::unique_ptr<testing::EtcdCluster> etcd_;
  std::size_t serving_ = 0;
  std::vector<std::vector<std::unique_ptr<FaultProxy>>> links_;  // [instance][node]
  std::vector<std::unique_ptr<testing::Fencelockd>> instances_;
  std::vector<bool> instance_paused_;
  struct Ports {
    std::vector<std::unique_ptr<std::atomic<std::uint16_t>>> slots;
    const std::atomic<std::uint16_t>& at(std::size_t i) const { return *slots.at(i); }
    std::atomic<std::uint16_t>& at(std::size_t i) { return *slots.at(i); }
  } ports_;
  testing::ChildProcess store_;
  std::uint16_t store_port_ = 0;
};

}  // namespace fencelock::faults
