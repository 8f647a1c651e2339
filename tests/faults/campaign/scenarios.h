// The campaign's table: each scenario is a nemesis (the faults, on a seeded schedule) with the
// cluster settings it needs, and — for a negative control — the properties that MUST report
// violations (a control that finds nothing means the checker is blind, and fails the run).
#pragma once

#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cluster.h"
#include "history.h"

namespace fencelock::faults {

// What a nemesis gets: the cluster, the history (to note its steps), a seeded random source and
// the end of the fault phase. It returns when the phase is over; the runner heals afterwards.
struct NemesisContext {
  Cluster& cluster;
  History& history;
  std::mt19937_64& random;
  std::chrono::steady_clock::time_point until;

  // Sleeps `d` but never past `until`; false once `until` has come.
  bool pause_for(std::chrono::milliseconds d) const;
  // `count` distinct node indexes, at random.
  std::vector<std::size_t> pick_nodes(std::size_t count) const;
};

struct Scenario {
  std::string name;
  std::string faults;  // one line for the report
  std::function<void(NemesisContext&)> nemesis;
  bool quarantine = true;
  std::size_t durable_nodes = 0;  // ClusterSettings::durable_nodes
  bool stray_instance = false;    // one more instance, on a token store of its own
  std::size_t instances = 2;      // fencelockd instances serving the workload
  std::vector<std::chrono::milliseconds> instance_max_ttl;  // ClusterSettings::instance_max_ttl
  std::string store_mode = "fenced";
  std::vector<std::string> must_fail;  // non-empty: a negative control
  // The nemesis's own clients (probe_acquire's process 100, the long lease's 101) whose requests
  // show that the hazard happened: a run where none of `hazards` ever sent one (or, with
  // `granted`, was ever granted) tested nothing, and fails as vacuous.
  struct Hazard {
    int process;
    bool granted;
  };
  std::vector<Hazard> hazards;
  // Properties the service does not promise under these faults (they break a stated assumption):
  // reported with their counts, never judged.
  std::vector<std::string> unpromised;
  // Draw from a naive counter (a bare INCR on the counter master) instead of the service's.
  bool naive_counter = false;
  // How long after healing an acquire must succeed: a restarted node's quarantine, or a lease
  // that survived the fault, and the retry delay.
  std::chrono::milliseconds liveness{4000};
};

std::vector<Scenario> all_scenarios();

}  // namespace fencelock::faults
