#include "scenarios.h"

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <map>
#include <numeric>
#include <optional>
#include <thread>

#include "http_client.h"
#include "operator_nemeses.h"
#include "sync_redis.h"
#include "workload.h"

namespace fencelock::faults {

namespace {

using std::chrono::milliseconds;
using namespace std::chrono_literals;

// Nemeses. Each runs until the context's `until`.

void calm(NemesisContext& c) {
  c.pause_for(milliseconds::max());
}

// SIGKILL a minority of nodes and start them again empty (no persistence), over and over.
void kill_minority(NemesisContext& c) {
  while (c.pause_for(milliseconds(300 + c.random() % 700))) {
    const auto nodes = c.pick_nodes(2);
    c.history.note("kill", "nodes " + list(nodes));
    for (const auto n : nodes) c.cluster.node(n).kill();
    c.pause_for(milliseconds(500 + c.random() % 1000));
    c.history.note("start-empty", "nodes " + list(nodes));
    for (const auto n : nodes) c.cluster.node(n).start();
  }
}

// A majority restarts empty at once while the nemesis holds its own lease (which no workload
// revoke or release can end early), and a probe asks for that lock at once: quarantine must keep
// the restarted nodes from voting. Without it the probe is granted over the held lease — every
// round, not only when a waiter happens to retry in the window (the negative control).
void restart_majority_empty(NemesisContext& c, std::chrono::milliseconds every) {
  while (c.pause_for(every)) {
    const auto lease_end = hold_lease(c, kNemesisLockName, kNemesisLease);
    if (!lease_end) continue;
    const auto nodes = c.pick_nodes(3);
    c.history.note("restart-empty",
                   "nodes " + list(nodes) + ", the nemesis's lease held for " +
                       std::to_string(std::chrono::duration_cast<milliseconds>(
                                          *lease_end - std::chrono::steady_clock::now())
                                          .count()) +
                       " ms more");
    for (const auto n : nodes) c.cluster.node(n).restart(false);
    probe_acquire(c, kNemesisLockName, *lease_end, /*write_set=*/false);
  }
}

// SIGKILL a majority of durable nodes (appendfsync always) and restart them with their data: they
// lose no acknowledged write, keep their marker and vote again at once (no quarantine).
void kill_durable_majority(NemesisContext& c) {
  while (c.pause_for(milliseconds(700 + c.random() % 800))) {
    const auto nodes = c.pick_nodes(3);
    c.history.note("kill", "nodes " + list(nodes));
    for (const auto n : nodes) c.cluster.node(n).kill();
    c.pause_for(milliseconds(200 + c.random() % 800));
    c.history.note("start-with-data", "nodes " + list(nodes));
    for (const auto n : nodes) c.cluster.node(n).start();
  }
}

void pause_nodes(NemesisContext& c, std::size_t count) {
  while (c.pause_for(milliseconds(200 + c.random() % 500))) {
    const auto nodes = c.pick_nodes(count);
    c.history.note("pause", "nodes " + list(nodes));
    for (const auto n : nodes) c.cluster.node(n).pause();
    c.pause_for(milliseconds(500 + c.random() % 1500));
    c.history.note("resume", "nodes " + list(nodes));
    for (const auto n : nodes) c.cluster.node(n).resume();
  }
}

// Instance i cut off from `count` nodes (both directions), then the other instance.
void partition(NemesisContext& c, std::size_t count) {
  std::size_t instance = 0;
  while (c.pause_for(milliseconds(300 + c.random() % 500))) {
    const auto nodes = c.pick_nodes(count);
    c.history.note("partition",
                   "instance " + std::to_string(instance) + " from nodes " + list(nodes));
    for (const auto n : nodes) c.cluster.link(instance, n).set_fault(LinkFault::blackhole());
    c.pause_for(milliseconds(1000 + c.random() % 1500));
    c.history.note("heal-partition", "instance " + std::to_string(instance));
    for (const auto n : nodes) c.cluster.link(instance, n).heal();
    instance = (instance + 1) % c.cluster.instance_count();
  }
}

// Every link gets a random fault every half second: delay 75 ± 50 ms, one direction cut, or its
// connections dropped.
void link_chaos(NemesisContext& c) {
  while (c.pause_for(500ms)) {
    for (std::size_t i = 0; i < c.cluster.instance_count(); ++i) {
      for (std::size_t n = 0; n < c.cluster.node_count(); ++n) {
        FaultProxy& link = c.cluster.link(i, n);
        switch (c.random() % 6) {
          case 0:
            link.set_fault({false, false, 75ms, 50ms});
            break;
          case 1:
            link.set_fault({true, false, {}, {}});
            break;
          case 2:
            link.set_fault({false, true, {}, {}});
            break;
          case 3:
            link.drop_connections();
            break;
          default:
            link.heal();
        }
      }
    }
    c.history.note("link-chaos");
  }
}

// Forward jumps, each beyond every ttl, on `count` nodes.
// Each round waits (up to `every`) for a holder between its read and its write of the set, jumps
// `count` nodes' clocks forward past every ttl (their keys expire at once), and probes the lock,
// doing the lock-set step itself if granted: with a majority jumped, the probe is granted over the
// held lease (leases overlap), and the holder's late write must be fenced off, or the probe's
// acknowledged element is lost (the unfenced control) — every round, not by chance.
void clock_jumps(NemesisContext& c, std::size_t count, std::chrono::milliseconds every) {
  const std::string name = WorkloadSettings{}.lock_name;
  std::int64_t offset = 0;
  while (c.pause_for(every)) {
    const auto lease_end = wait_for_held_lease(c, name, /*mid_write=*/true, every);
    offset += 10'000;
    const auto nodes = c.pick_nodes(count);
    c.history.note("clock-jump", "+" + std::to_string(offset) + " ms on nodes " + list(nodes));
    for (const auto n : nodes) c.cluster.set_node_clock(n, offset);
    probe_acquire(c, name, lease_end, /*write_set=*/true);
  }
}

void clock_drift(NemesisContext& c) {
  const auto nodes = c.pick_nodes(1);
  c.history.note("clock-drift", "+50 % on node " + list(nodes));
  c.cluster.set_node_clock(nodes[0], 0, 500'000);
  c.pause_for(milliseconds::max());
}

// The registry's hard case: a majority of nodes restarts empty, and the misconfigured instance (on
// a token store of its own) restarts while cut off from the nodes that still remember the right
// store. It must never bind them, nor grant: a token of its own would repeat the others'.
void stray_store(NemesisContext& c) {
  const std::size_t stray = c.cluster.instance_count() - 1;
  while (c.pause_for(milliseconds(1500 + c.random() % 1000))) {
    const auto forgetful = c.pick_nodes(3);
    std::vector<std::size_t> remembering;
    for (std::size_t n = 0; n < c.cluster.node_count(); ++n) {
      if (std::find(forgetful.begin(), forgetful.end(), n) == forgetful.end()) {
        remembering.push_back(n);
      }
    }
    c.history.note("restart-empty", "nodes " + list(forgetful));
    for (const auto n : forgetful) c.cluster.node(n).restart(false);
    c.history.note("partition", "stray instance from nodes " + list(remembering));
    for (const auto n : remembering) c.cluster.link(stray, n).set_fault(LinkFault::blackhole());
    c.history.note("restart-instance", std::to_string(stray));
    c.cluster.kill_instance(stray);
    c.cluster.start_instance(stray);
    c.pause_for(milliseconds(1000 + c.random() % 1000));
    c.history.note("heal-partition", "stray instance");
    for (const auto n : remembering) c.cluster.link(stray, n).heal();
  }
}

// fencelockd paused mid-flight (between a quorum and its answer, among others), then resumed.
void pause_instances(NemesisContext& c) {
  while (c.pause_for(milliseconds(300 + c.random() % 700))) {
    const std::size_t i = c.random() % c.cluster.instance_count();
    c.history.note("pause-instance", std::to_string(i));
    c.cluster.pause_instance(i);
    c.pause_for(milliseconds(500 + c.random() % 2000));
    c.history.note("resume-instance", std::to_string(i));
    c.cluster.resume_instance(i);
  }
}

// fencelockd stopped exactly between deciding a grant and answering it (its failpoint), for longer
// than the lease: the answer arrives late, and the client's own deadline (send time + waited_ms +
// validity_ms) must already be behind it — no window may overlap the next holder's.
void pause_instances_after_quorum(NemesisContext& c) {
  while (c.pause_for(milliseconds(300 + c.random() % 700))) {
    const std::size_t i = c.random() % c.cluster.instance_count();
    if (!c.cluster.pause_instance_after_next_grant(i, 2500ms)) continue;
    c.history.note("paused-after-quorum", "instance " + std::to_string(i));
    c.pause_for(milliseconds(1000 + c.random() % 2000));
    c.history.note("resume-instance", std::to_string(i));
    c.cluster.resume_instance(i);
  }
}

void kill_instances(NemesisContext& c) {
  while (c.pause_for(milliseconds(500 + c.random() % 1000))) {
    const std::size_t i = c.random() % c.cluster.instance_count();
    c.history.note("kill-instance", std::to_string(i));
    c.cluster.kill_instance(i);
    c.pause_for(milliseconds(300 + c.random() % 700));
    c.history.note("start-instance", std::to_string(i));
    c.cluster.start_instance(i);
  }
}

// fencelockd's own wall clock jumps an hour either way: it must not care (it times with the
// steady clock).
void instance_clocks(NemesisContext& c) {
  std::int64_t sign = 1;
  while (c.pause_for(1000ms)) {
    for (std::size_t i = 0; i < c.cluster.instance_count(); ++i) {
      c.cluster.set_instance_clock(i, sign * 3'600'000);
      sign = -sign;
    }
    c.history.note("instance-clocks", "±1 h");
  }
}

// The counter master stops answering for a while (GC-like pause of the token store).
void pause_counter(NemesisContext& c) {
  while (c.pause_for(milliseconds(400 + c.random() % 800))) {
    c.history.note("pause-counter");
    c.cluster.counter().pause();
    c.pause_for(milliseconds(500 + c.random() % 1500));
    c.history.note("resume-counter");
    c.cluster.counter().resume();
  }
}

void kill_counter(NemesisContext& c) {
  while (c.pause_for(milliseconds(800 + c.random() % 800))) {
    c.history.note("kill-counter");
    c.cluster.counter().kill();
    c.pause_for(milliseconds(300 + c.random() % 700));
    c.history.note("start-counter");
    c.cluster.counter().start();
  }
}

// The counter master loses its last acknowledged writes: kill -9, and start it from a copy of its
// files taken a while before.
void counter_loses_tail(NemesisContext& c) {
  namespace fs = std::filesystem;
  const fs::path copy = c.cluster.dir() / "counter-copy";
  while (c.pause_for(500ms)) {
    fs::remove_all(copy);
    fs::copy(c.cluster.counter().data_dir(), copy, fs::copy_options::recursive);
    c.history.note("copy-counter-files");
    if (!c.pause_for(milliseconds(800 + c.random() % 800))) break;
    c.cluster.counter().kill();
    fs::remove_all(c.cluster.counter().data_dir());
    fs::copy(copy, c.cluster.counter().data_dir(), fs::copy_options::recursive);
    c.history.note("counter-restored-from-copy", "the writes since the copy are lost");
    c.cluster.counter().start();
  }
}

Scenario make(std::string name, std::string faults, std::function<void(NemesisContext&)> nemesis) {
  Scenario s;
  s.name = std::move(name);
  s.faults = std::move(faults);
  s.nemesis = std::move(nemesis);
  return s;
}

// A negative control: `must_fail` are the properties that must report violations.
Scenario control(std::string name, std::string faults, std::function<void(NemesisContext&)> nemesis,
                 std::vector<std::string> must_fail) {
  Scenario s = make(std::move(name), std::move(faults), std::move(nemesis));
  s.must_fail = std::move(must_fail);
  return s;
}

// An instance of another deployment (`key_prefix`) the nemesis starts and stops, which the
// workload never uses.
InstanceSpec outsider(std::string key_prefix) {
  InstanceSpec spec;
  spec.key_prefix = std::move(key_prefix);
  spec.serving = false;
  spec.spare = true;
  return spec;
}

// A serving instance with --quarantine off that the nemesis starts and stops.
InstanceSpec spare_without_quarantine() {
  InstanceSpec spec;
  spec.quarantine = false;
  spec.spare = true;
  return spec;
}

// A serving instance the nemesis starts and stops.
InstanceSpec spare() {
  InstanceSpec spec;
  spec.spare = true;
  return spec;
}

Scenario with_liveness(Scenario s, std::chrono::milliseconds bound) {
  s.liveness = bound;
  return s;
}

}  // namespace

std::vector<Scenario> all_scenarios() {
  // A node restarted without persistence votes again after max-ttl plus drift by its own uptime
  // (whole seconds, taken a second short): about 5 s with the campaign's 3 s max-ttl.
  constexpr auto kAfterQuarantine = 7000ms;
  std::vector<Scenario> s;
  s.push_back(make("calm", "no faults (baseline)", calm));
  s.push_back(with_liveness(
      make("kill-minority", "SIGKILL 2 of 5 nodes, restart empty, repeatedly", kill_minority),
      kAfterQuarantine));
  Scenario restart =
      with_liveness(make("restart-majority-empty", "3 of 5 nodes restart empty at once while held",
                         [](NemesisContext& c) { restart_majority_empty(c, 3000ms); }),
                    kAfterQuarantine);
  restart.hazards = {{kLongLeaseProcess, true}, {kProbeProcess, false}};
  s.push_back(restart);
  Scenario stray = with_liveness(
      make("stray-token-store",
           "a third fencelockd on its own SQLite file restarts, cut off from 2 nodes, each time 3 "
           "of 5 nodes restart empty",
           stray_store),
      kAfterQuarantine);
  stray.stray_instance = true;
  s.push_back(stray);
  Scenario durable = make("kill-durable-majority",
                          "5 durable nodes (AOF always); SIGKILL 3, restart with data, repeatedly",
                          kill_durable_majority);
  durable.durable_nodes = 5;
  s.push_back(durable);
  s.push_back(make("pause-minority", "SIGSTOP 2 of 5 nodes for 0.5-2 s, repeatedly",
                   [](NemesisContext& c) { pause_nodes(c, 2); }));
  s.push_back(make("pause-majority", "SIGSTOP 3 of 5 nodes for 0.5-2 s, repeatedly",
                   [](NemesisContext& c) { pause_nodes(c, 3); }));
  s.push_back(make("partition-minority", "one instance cut off from 2 nodes, alternating",
                   [](NemesisContext& c) { partition(c, 2); }));
  s.push_back(make("partition-majority", "one instance cut off from 3 nodes, alternating",
                   [](NemesisContext& c) { partition(c, 3); }));
  s.push_back(make("link-chaos", "every link: delay 75±50 ms, one-way cuts, dropped connections",
                   link_chaos));
  // Outside Redlock's timing assumption (no forward jumps, drift within --drift-factor): a lease
  // that holds a bare majority (3 of 5, when a node missed the SET) loses it to a jump or a fast
  // clock on ONE of its nodes. Leases are reported, not judged; fencing must still hold.
  Scenario jump_one =
      make("clock-jump-one", "one node's clock jumps forward past every ttl, repeatedly",
           [](NemesisContext& c) { clock_jumps(c, 1, 1500ms); });
  jump_one.unpromised = {"leases"};
  s.push_back(jump_one);
  Scenario drift_one = make("clock-drift-one", "one node's clock runs 50 % fast", clock_drift);
  drift_one.unpromised = {"leases"};
  s.push_back(drift_one);
  s.push_back(
      make("pause-instance", "SIGSTOP a fencelockd for 0.5-2.5 s, repeatedly", pause_instances));
  s.push_back(make("pause-instance-after-quorum",
                   "a fencelockd stops between a grant's quorum and its answer for 1-3 s",
                   pause_instances_after_quorum));
  s.push_back(make("kill-instance", "SIGKILL a fencelockd and start it again", kill_instances));
  s.push_back(make("instance-clock", "fencelockd wall clocks jump ±1 h", instance_clocks));
  s.push_back(
      make("kill-counter", "SIGKILL the token counter master, restart (AOF always)", kill_counter));
  s.push_back(make("pause-counter", "SIGSTOP the token counter master for 0.5-2 s, repeatedly",
                   pause_counter));
  s.push_back(make("counter-loses-tail",
                   "the counter master restarts from an older copy of its files",
                   counter_loses_tail));
  s.push_back(make("operator-counter-wiped",
                   "the counter master's data and every epoch file lost; instances restart as new "
                   "pods",
                   counter_wiped_new_pods));
  s.push_back(with_liveness(
      make("operator-nodes-evict",
           "3 of 5 nodes switched to maxmemory 1 volatile-ttl (every lease evicted) while a "
           "lease is held, then back",
           nodes_evict),
      kAfterQuarantine));
  s.back().hazards = {{kLongLeaseProcess, true}, {kProbeProcess, false}};
  Scenario restored = with_liveness(
      make("operator-restore-from-backup",
           "5 durable nodes; 3 backed up, then restored from that backup while a later lease is "
           "held",
           restore_from_backup),
      kAfterQuarantine);
  restored.durable_nodes = 5;
  restored.hazards = {{kLongLeaseProcess, true}, {kProbeProcess, false}};
  s.push_back(restored);
  // The longer instance's window: its max ttl plus drift, from the last restart.
  constexpr auto kLongMaxTtl = 6000ms;
  Scenario mixed = with_liveness(
      make("operator-mixed-max-ttl",
           "instances with --max-ttl 6 s and 3 s; the 6 s one grants 5 s, 3 of 5 nodes restart "
           "empty, the 3 s one is asked",
           [](NemesisContext& c) { mixed_max_ttl(c, 5000ms); }),
      kLongMaxTtl + 3000ms);
  mixed.instance_max_ttl = {kLongMaxTtl, 3000ms};
  mixed.hazards = {{kLongLeaseProcess, true}, {kProbeProcess, false}};
  // A round: a second's pause, then the 5 s lease (on the nemesis's own lock) and its probe.
  mixed.quick_fault_phase_at_least = 7000ms;
  s.push_back(mixed);
  Scenario persistence = with_liveness(
      make("operator-persistence-off",
           "5 durable nodes; 3 switched to appendonly no at runtime, then killed and started "
           "from their files while the nemesis holds a lease",
           persistence_off),
      kAfterQuarantine);
  persistence.durable_nodes = 5;
  persistence.hazards = {{kLongLeaseProcess, true}, {kProbeProcess, false}};
  s.push_back(persistence);
  Scenario flags = with_liveness(
      make("operator-flags-join-leave",
           "while a lease is held, a serving instance with --quarantine off and one with "
           "another --key-prefix join, 3 of 5 nodes restart empty; they leave",
           flags_join_leave),
      kAfterQuarantine);
  flags.instances = 4;
  flags.instance_specs = {{}, {}, spare_without_quarantine(), outsider("other:")};
  flags.hazards = {{kLongLeaseProcess, true}, {kProbeProcess, false}};
  s.push_back(flags);
  // SQLite: one serving instance, and the spare that runs on copies of its file.
  Scenario copied = with_liveness(
      make("operator-copied-token-file",
           "SQLite: the live token file copied (backup API), a second instance started on the "
           "copy beside the first, stopped, repeatedly",
           copied_token_file),
      kAfterQuarantine);
  copied.token_source = "sqlite";
  copied.instance_specs = {{}, spare()};
  s.push_back(copied);
  // Refused for good once it is behind the nodes' mark: liveness is not promised.
  Scenario restored_file = make("operator-restored-token-file",
                                "SQLite: the live token file backed up, and 4 s later (over a "
                                "reservation block) the instance started again on the backup",
                                restored_token_file);
  restored_file.token_source = "sqlite";
  restored_file.instances = 1;
  restored_file.draw_clients = 6;
  restored_file.hazards = {{kProbeProcess, false}};
  restored_file.unpromised = {"liveness"};
  restored_file.quick_fault_phase_at_least = 6s;  // the first restore comes 4.5 s in, then a probe
  s.push_back(restored_file);
  // etcd token source (docs/safety.md listed it as not covered).
  Scenario etcd_kills = with_liveness(
      make("etcd-member-kills",
           "etcd tokens: SIGKILL the etcd leader, or 2 of 3 members, in turn; start them again",
           etcd_member_kills),
      kAfterQuarantine);
  etcd_kills.token_source = "etcd";
  s.push_back(etcd_kills);
  // A wiped or restored etcd is behind the nodes' fences: refused for those names (503) until
  // its revisions pass them, so liveness is not promised.
  Scenario etcd_wipe = make("operator-etcd-wiped",
                            "etcd tokens: every member's data deleted, the cluster bootstrapped "
                            "again, repeatedly",
                            etcd_wiped);
  etcd_wipe.token_source = "etcd";
  etcd_wipe.unpromised = {"liveness"};
  s.push_back(etcd_wipe);
  Scenario etcd_restore = make("operator-etcd-restored",
                               "etcd tokens: the cluster backed up, and 1.5-2.5 s later restored "
                               "from that backup",
                               etcd_restored);
  etcd_restore.token_source = "etcd";
  etcd_restore.unpromised = {"liveness"};
  s.push_back(etcd_restore);
  Scenario three = make("three-instances-kill", "three fencelockd; SIGKILL one and start it again",
                        kill_instances);
  three.instances = 3;
  s.push_back(three);
  // Negative controls: each MUST show violations, or the checkers are blind.
  Scenario quarantine_off =
      control("control-quarantine-off", "quarantine off; 3 of 5 nodes restart empty while held",
              [](NemesisContext& c) { restart_majority_empty(c, 1000ms); }, {"leases"});
  quarantine_off.quarantine = false;
  quarantine_off.hazards = restart.hazards;
  s.push_back(quarantine_off);
  s.push_back(control("control-clock-majority", "3 of 5 nodes' clocks jump forward past every ttl",
                      [](NemesisContext& c) { clock_jumps(c, 3, 1000ms); }, {"leases"}));
  Scenario unfenced =
      control("control-unfenced-store", "as control-clock-majority, against the unfenced store",
              [](NemesisContext& c) { clock_jumps(c, 3, 1000ms); }, {"leases", "set"});
  unfenced.store_mode = "unfenced";
  s.push_back(unfenced);
  // The token checker is not blind to repeats: a bare INCR counter (what the epoch guard of the
  // Redis token source protects against) under the same loss of acknowledged writes.
  Scenario naive = control("control-naive-counter",
                           "counter-loses-tail, drawing with a bare INCR (no epoch guard)",
                           counter_loses_tail, {"tokens"});
  naive.naive_counter = NaiveCounter::kRedisIncr;
  s.push_back(naive);
  // The operator faults above do create the hazard: without quarantine, each is a double grant.
  Scenario evict_off = control("control-operator-nodes-evict",
                               "operator-nodes-evict, quarantine off", nodes_evict, {"leases"});
  evict_off.quarantine = false;
  evict_off.hazards = {{kLongLeaseProcess, true}, {kProbeProcess, false}};
  s.push_back(evict_off);
  Scenario restored_off =
      control("control-operator-restore-from-backup",
              "operator-restore-from-backup, quarantine off", restore_from_backup, {"leases"});
  restored_off.quarantine = false;
  restored_off.durable_nodes = 5;
  restored_off.hazards = restored.hazards;
  s.push_back(restored_off);
  Scenario mixed_off =
      control("control-operator-mixed-max-ttl", "operator-mixed-max-ttl, quarantine off",
              [](NemesisContext& c) { mixed_max_ttl(c, 5000ms); }, {"leases"});
  mixed_off.quarantine = false;
  mixed_off.instance_max_ttl = {kLongMaxTtl, 3000ms};
  mixed_off.quick_fault_phase_at_least = mixed.quick_fault_phase_at_least;
  mixed_off.hazards = mixed.hazards;
  s.push_back(mixed_off);
  Scenario persistence_off_control =
      control("control-operator-persistence-off", "operator-persistence-off, quarantine off",
              persistence_off, {"leases"});
  persistence_off_control.quarantine = false;
  persistence_off_control.durable_nodes = 5;
  persistence_off_control.hazards = persistence.hazards;
  s.push_back(persistence_off_control);
  Scenario flags_off = control("control-operator-flags-join-leave",
                               "operator-flags-join-leave, quarantine off on the serving instances",
                               flags_join_leave, {"leases"});
  flags_off.quarantine = false;
  flags_off.instances = 4;
  flags_off.instance_specs = flags.instance_specs;
  flags_off.hazards = flags.hazards;
  s.push_back(flags_off);
  // The token checker sees what a copied or restored file hands out when nothing but the file
  // keeps order: a naive counter file, copied (and drawn from) alongside the token file.
  Scenario copied_naive = control("control-operator-copied-token-file",
                                  "operator-copied-token-file, drawing from an SQLite counter "
                                  "file and its copy (no fence)",
                                  copied_token_file, {"tokens"});
  copied_naive.token_source = "sqlite";
  copied_naive.instance_specs = {{}, spare()};
  copied_naive.naive_counter = NaiveCounter::kSqliteFiles;
  s.push_back(copied_naive);
  Scenario restored_naive = control("control-operator-restored-token-file",
                                    "operator-restored-token-file, drawing from an SQLite counter "
                                    "file and its backup (no fence)",
                                    restored_token_file, {"tokens"});
  restored_naive.token_source = "sqlite";
  restored_naive.instances = 1;
  restored_naive.naive_counter = NaiveCounter::kSqliteFiles;
  restored_naive.quick_fault_phase_at_least = restored_file.quick_fault_phase_at_least;
  s.push_back(restored_naive);
  Scenario naive_wiped = control("control-operator-counter-wiped",
                                 "operator-counter-wiped, drawing with a bare INCR (no fence)",
                                 counter_wiped_new_pods, {"tokens"});
  naive_wiped.naive_counter = NaiveCounter::kRedisIncr;
  s.push_back(naive_wiped);
  return s;
}

}  // namespace fencelock::faults
