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
#include "nemesis_tools.h"
#include "workload.h"

namespace fencelock::faults {

struct Scenario {
  std::string name;
  std::string faults;  // one line for the report
  std::function<void(NemesisContext&)> nemesis;
  bool quarantine = true;
  std::size_t durable_nodes = 0;  // ClusterSettings::durable_nodes
  bool stray_instance = false;    // one more instance, on a token store of its own
  std::size_t instances = 2;      // fencelockd instances serving the workload
  std::vector<std::chrono::milliseconds> instance_max_ttl;  // ClusterSettings::instance_max_ttl
  std::string token_source = "redis";                       // ClusterSettings::token_source
  std::vector<InstanceSpec> instance_specs;                 // ClusterSettings::instance_specs
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
  std::size_t draw_clients = 1;  // WorkloadSettings::draw_clients
  // Draw from a naive counter instead of the service's (WorkloadSettings::naive_counter).
  NaiveCounter naive_counter = NaiveCounter::kNone;
  // How long after healing an acquire must succeed: a restarted node's quarantine, or a lease
  // that survived the fault, and the retry delay.
  std::chrono::milliseconds liveness{4000};
  // --quick's fault phase is no shorter than this: a nemesis that needs longer to get its fault in.
  std::chrono::milliseconds quick_fault_phase_at_least{0};
};

std::vector<Scenario> all_scenarios();

}  // namespace fencelock::faults
