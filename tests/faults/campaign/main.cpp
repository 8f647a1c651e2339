// fencelock_faults: the fault campaign. Starts a cluster of real processes per scenario, runs the
// workloads under the scenario's nemesis, heals, checks the history, and prints one line per
// scenario (and the smallest window of history for every violation).
//
//   fencelock_faults --bin BUILD_DIR --out DIR [--quick | --long] [--seed N] [--only NAME[,NAME]]
//
// --quick runs every scenario once with a short fault phase; --long runs a seeded mix of the
// non-control scenarios with longer phases for 30 minutes. Exit 0 only if every property held in
// every scenario and every negative control fired. Histories: DIR/<run>-<scenario>.jsonl;
// results: DIR/results.jsonl (one JSON object per scenario run).
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "checkers.h"
#include "cluster.h"
#include "history.h"
#include "scenarios.h"
#include "workload.h"

namespace {

using namespace fencelock::faults;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// --quick: every scenario once, with this fault phase (or its own longer one).
constexpr std::chrono::milliseconds kQuickFaultPhase = 4s;

struct Options {
  std::string bin;
  std::string out = "build/faults";
  bool quick = true;
  std::uint64_t seed = 1;
  std::set<std::string> only;
};

nlohmann::json count_operations(const std::vector<Operation>& history) {
  std::map<std::string, std::map<std::string, std::size_t>> counts;  // f → outcome → count
  for (const Operation& op : history) {
    if (op.process >= 0) ++counts[op.f][to_string(op.outcome)];
  }
  return counts;
}

// Liveness is the contended lock's (the listing client's own names are almost always free) and the
// read/write lock's writers' (readers alone would not show a writer starved after healing).
CheckResult liveness(const std::vector<Operation>& ops, const WorkloadSettings& load,
                     std::int64_t healed_ns, std::chrono::milliseconds bound) {
  CheckResult result = check_liveness(ops, healed_ns, bound, load.lock_name);
  if (load.rw_clients == 0) return result;
  CheckResult writers = check_liveness(ops, healed_ns, bound, load.rw_lock_name, "write");
  result.checked += writers.checked;
  for (Violation& violation : writers.violations) result.violations.push_back(std::move(violation));
  return result;
}

// Runs one scenario; true when it went as it must.
bool run(const Scenario& scenario, const Options& options, std::uint64_t seed,
         std::chrono::milliseconds fault_phase, int run_number, std::ofstream& results) {
  ClusterSettings settings;
  settings.quarantine = scenario.quarantine;
  settings.durable_nodes = scenario.durable_nodes;
  settings.instances = scenario.instances;
  settings.instance_max_ttl = scenario.instance_max_ttl;
  settings.token_source = scenario.token_source;
  settings.instance_specs = scenario.instance_specs;
  if (scenario.stray_instance) {
    settings.instances += 1;
    settings.stray_instances = 1;
  }
  settings.store_mode = scenario.store_mode;
  settings.seed = seed;
  settings.bin_dir = options.bin;
  Cluster cluster(settings);
  History history;
  WorkloadSettings load;
  load.seed = seed;
  load.draw_clients = scenario.draw_clients;
  if (scenario.naive_counter != NaiveCounter::kNone) {
    load.naive_counter = scenario.naive_counter;
    load.draw_clients = 0;
  }
  Workload workload(cluster, history, load);
  const auto began = Clock::now();
  const auto heal_at = began + 1s + fault_phase;
  // A control's liveness is not judged (its faults broke a promise): at most a second after
  // healing.
  const auto end_at = heal_at + (scenario.must_fail.empty() ? scenario.liveness : 0s) + 1s;
  workload.start(end_at);

  std::mt19937_64 random(seed);
  std::this_thread::sleep_for(1s);  // the workload warms up first
  history.note("faults-begin", scenario.faults);
  NemesisContext context{cluster, history, random, heal_at};
  scenario.nemesis(context);
  cluster.heal();
  const std::int64_t healed_ns = history.now_ns();
  history.note("healed");
  // The run ends once the liveness check has what it needs — an acquire invoked after healing and
  // granted — and 3 s have been watched, or at the bound (+1 s), whichever comes first.
  const auto granted_after_heal = [&] {
    const std::vector<Operation> ops = history.operations();
    const auto granted = [&](const std::string& name, const std::string& mode) {
      return std::any_of(ops.begin(), ops.end(), [&](const Operation& op) {
        return op.f == "acquire" && op.name == name && (mode.empty() || op.mode == mode) &&
               op.outcome == Outcome::kOk && op.invoke_ns >= healed_ns;
      });
    };
    return granted(load.lock_name, "") &&
           (load.rw_clients == 0 || granted(load.rw_lock_name, "write"));
  };
  // Faults end with the heal (restarted processes serve again): at least 3 s (the campaign's max
  // ttl: a quarantine that began at the end of the fault phase) are watched after it.
  const auto watched_until = Clock::now() + (scenario.must_fail.empty() ? 3s : 0s);
  while (Clock::now() < end_at && (Clock::now() < watched_until || !granted_after_heal()))
    std::this_thread::sleep_for(50ms);
  workload.stop();
  const std::map<std::string, std::string> final_sets = workload.final_sets();

  const std::vector<Operation> ops = history.operations();
  std::vector<CheckResult> checks{check_tokens(ops), check_leases(ops), check_requests(ops),
                                  check_store(parse_store_log(cluster.store_log())),
                                  check_set(ops, final_sets)};
  const bool control = !scenario.must_fail.empty();
  checks.push_back(check_listing(ops));
  if (!control) checks.push_back(liveness(ops, load, healed_ns, scenario.liveness));

  bool as_it_must = true;
  std::ostringstream line;
  std::ostringstream windows;
  line << (control ? "control " : "") << scenario.name << " (seed " << seed << "):";
  for (const Scenario::Hazard& hazard : scenario.hazards) {
    const bool happened = std::any_of(ops.begin(), ops.end(), [&](const Operation& op) {
      return op.process == hazard.process &&
             (!hazard.granted || (op.f == "acquire" && op.outcome == Outcome::kOk));
    });
    if (happened) continue;
    as_it_must = false;  // the nemesis never got its fault in: nothing was tested
    line << " vacuous (no " << (hazard.granted ? "grant" : "request") << " by process "
         << hazard.process << ")!";
  }
  nlohmann::json properties = nlohmann::json::object();
  for (const CheckResult& check : checks) {
    const auto in = [](const std::vector<std::string>& list, const std::string& property) {
      return std::find(list.begin(), list.end(), property) != list.end();
    };
    const bool expected_to_fail = in(scenario.must_fail, check.property);
    // In an unfenced control the store's own properties are what is shown to break; a property
    // the scenario's faults put outside the promise is reported only. One request granted twice
    // is two leases at once: where the faults break leases, requests are reported only, too.
    // Listing is promised for names held on a majority: where leases break, so may that.
    const bool follows_leases = check.property == "requests" || check.property == "listing";
    const bool unpromised =
        in(scenario.unpromised, check.property) ||
        (follows_leases && (in(scenario.unpromised, "leases") || in(scenario.must_fail, "leases")));
    const bool judged =
        !unpromised && !(control && scenario.store_mode == "unfenced" && check.property == "store");
    const bool good = expected_to_fail ? !check.ok() : (check.ok() || !judged);
    as_it_must = as_it_must && good;
    line << " " << check.property << "=" << check.checked << "/" << check.violations.size()
         << (good ? "" : "!");
    properties[check.property] = {{"checked", check.checked},
                                  {"violations", check.violations.size()},
                                  {"expected_violations", expected_to_fail},
                                  {"promised", !unpromised},
                                  {"as_it_must", good}};
    const std::size_t shown = expected_to_fail || !judged ? 1 : check.violations.size();
    for (std::size_t v = 0; v < std::min<std::size_t>({shown, 3, check.violations.size()}); ++v) {
      windows << "  [" << check.property
              << (expected_to_fail ? ", expected"
                  : !judged        ? ", not promised here"
                                   : "")
              << "] " << describe(ops, check.violations[v]);
    }
  }
  const auto history_file =
      options.out + "/" + std::to_string(run_number) + "-" + scenario.name + ".jsonl";
  history.write_jsonl(history_file);
  std::cout << (as_it_must ? "PASS " : "FAIL ") << line.str() << "  ("
            << std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - began).count()
            << " s)\n"
            << windows.str() << std::flush;
  results << nlohmann::json{{"run", run_number},
                            {"scenario", scenario.name},
                            {"faults", scenario.faults},
                            {"control", control},
                            {"seed", seed},
                            {"fault_phase_ms", fault_phase.count()},
                            {"operations", count_operations(ops)},
                            {"properties", properties},
                            {"as_it_must", as_it_must},
                            {"history", history_file}}
                 .dump()
          << '\n'
          << std::flush;
  return as_it_must;
}

bool parse(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (flag == "--quick") {
      options.quick = true;
    } else if (flag == "--long") {
      options.quick = false;
    } else if (flag == "--bin" && has_value) {
      options.bin = argv[++i];
    } else if (flag == "--out" && has_value) {
      options.out = argv[++i];
    } else if (flag == "--seed" && has_value) {
      options.seed = std::stoull(argv[++i]);
    } else if (flag == "--only" && has_value) {
      std::stringstream names(argv[++i]);
      for (std::string name; std::getline(names, name, ',');) options.only.insert(name);
    } else {
      std::cerr << "fencelock_faults: unknown or incomplete flag " << flag << "\n";
      return false;
    }
  }
  if (options.bin.empty()) {
    std::cerr << "fencelock_faults: --bin BUILD_DIR is required\n";
    return false;
  }
  return true;
}

int campaign(int argc, char** argv) {
  Options options;
  if (!parse(argc, argv, options)) return 2;
  std::signal(SIGPIPE, SIG_IGN);
  std::filesystem::create_directories(options.out);
  std::ofstream results(options.out + "/results.jsonl", std::ios::trunc);
  std::vector<Scenario> scenarios;
  for (Scenario& s : all_scenarios()) {
    if (options.only.empty() || options.only.count(s.name) != 0) scenarios.push_back(std::move(s));
  }
  if (scenarios.empty()) {
    std::cerr << "fencelock_faults: no scenario matches --only\n";
    return 2;
  }
  int failures = 0;
  int run_number = 0;
  if (options.quick) {
    for (const Scenario& s : scenarios) {
      ++run_number;
      const auto phase =
          std::max<std::chrono::milliseconds>(kQuickFaultPhase, s.quick_fault_phase_at_least);
      if (!run(s, options, options.seed + static_cast<std::uint64_t>(run_number), phase, run_number,
               results)) {
        ++failures;
      }
    }
  } else {
    std::mt19937_64 random(options.seed);
    const auto until = Clock::now() + 30min;
    while (Clock::now() < until) {
      const Scenario& s = scenarios[random() % scenarios.size()];
      if (!s.must_fail.empty()) continue;  // controls belong to --quick
      ++run_number;
      if (!run(s, options, options.seed + static_cast<std::uint64_t>(run_number), 25s, run_number,
               results)) {
        ++failures;
      }
    }
  }
  std::cout << (failures == 0 ? "faults: all properties held and every control fired"
                              : "faults: " + std::to_string(failures) + " scenario run(s) failed")
            << " (" << run_number << " runs; histories and results in " << options.out << ")\n";
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return campaign(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "fencelock_faults: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "fencelock_faults: unknown error\n";
  }
  return 1;
}
