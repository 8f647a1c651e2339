#include "operator_nemeses.h"

#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <thread>

#include "http_client.h"
#include "sync_redis.h"
#include "workload.h"

namespace fencelock::faults {

using std::chrono::milliseconds;
using namespace std::chrono_literals;

// Operators' mistakes (issue #32 item 9). The counter master's disk is lost (it restarts empty)
// and every fencelockd starts again as a new pod would, without its epoch file: the sources begin
// again at epoch 0's first tokens, below the lock nodes' fences. The fence must refuse them and
// the sources skip past it (no repeat, no backward token), and grants must resume.
void counter_wiped_new_pods(NemesisContext& c) {
  namespace fs = std::filesystem;
  while (c.pause_for(milliseconds(1200 + c.random() % 800))) {
    for (std::size_t i = 0; i < c.cluster.instance_count(); ++i) c.cluster.kill_instance(i);
    c.cluster.counter().restart(/*keep_data=*/false);
    for (std::size_t i = 0; i < c.cluster.instance_count(); ++i)
      fs::remove(c.cluster.dir() / ("epoch" + std::to_string(i)));
    c.history.note("counter-wiped-new-pods", "the counter master and every epoch file are lost");
    for (std::size_t i = 0; i < c.cluster.instance_count(); ++i) c.cluster.start_instance(i);
  }
}

// Operators' mistakes on lock nodes (issue #32 item 9).

// A node's memory policy switched to an evicting one at runtime (a managed Redis's default, a
// config push) with a limit below what it holds, and back a moment later: volatile-ttl with
// `maxmemory 1` evicts every key with a ttl — the leases — before the next command.
namespace {

void evict_lease_keys(testing::RedisServer& server) {
  testing::SyncRedis node(server.port(), 5s);
  node.command({"CONFIG", "SET", "maxmemory-policy", "volatile-ttl"});
  node.command({"CONFIG", "SET", "maxmemory", "1"});
  node.command({"PING"});  // evictions run before each command
  node.command({"CONFIG", "SET", "maxmemory", "0"});
}

}  // namespace

// Each round takes the nemesis's own lease, evicts its key on a majority as above, and probes: the
// eviction must keep those nodes from voting until the lease could have ended.
void nodes_evict(NemesisContext& c) {
  while (c.pause_for(1000ms)) {
    const auto lease_end = hold_lease(c, kNemesisLockName, kNemesisLease);
    if (!lease_end) continue;
    const auto nodes = c.pick_nodes(3);
    c.history.note("evict", "nodes " + list(nodes) +
                                ": maxmemory 1 volatile-ttl (every lease evicted), then "
                                "maxmemory 0");
    for (const auto n : nodes) evict_lease_keys(c.cluster.node(n));
    probe_acquire(c, kNemesisLockName, *lease_end, /*write_set=*/false);
  }
}

// A majority of durable nodes is backed up (stopped, files copied, started again with their
// data), and later — after leases granted since — restored from that backup while a lease is
// held: the restored nodes lost its key and everything else written since the backup.
void restore_from_backup(NemesisContext& c) {
  namespace fs = std::filesystem;
  while (c.pause_for(1000ms)) {
    const auto nodes = c.pick_nodes(3);
    for (const auto n : nodes) {
      testing::RedisServer& node = c.cluster.node(n);
      const fs::path backup = c.cluster.dir() / ("backup" + std::to_string(n));
      node.kill();
      fs::remove_all(backup);
      fs::copy(node.data_dir(), backup, fs::copy_options::recursive);
      node.start();
    }
    c.history.note("backup", "nodes " + list(nodes) + " (stopped, copied, started with data)");
    if (!c.pause_for(1500ms)) break;
    // The nemesis's own lease (restoring takes a few hundred ms of its 3 s): the workload's
    // revokes cannot cut it short, so a probe granted within it is always an overlap.
    const auto lease_end = hold_lease(c, kNemesisLockName, kNemesisLease);
    if (!lease_end) continue;
    for (const auto n : nodes) {
      testing::RedisServer& node = c.cluster.node(n);
      node.kill();
      fs::remove_all(node.data_dir());
      fs::copy(c.cluster.dir() / ("backup" + std::to_string(n)), node.data_dir(),
               fs::copy_options::recursive);
      node.spawn();
    }
    for (const auto n : nodes) {
      try {
        c.cluster.node(n).wait_ready();
      } catch (const std::runtime_error&) {
        c.cluster.node(n).start();  // its port was taken meanwhile: another one
      }
    }
    c.history.note("restore-from-backup", "nodes " + list(nodes) + ", the nemesis's lease held");
    probe_acquire(c, kNemesisLockName, *lease_end, /*write_set=*/false);
  }
}

// Instances with different --max-ttl: instance 0 (the longer one) grants the nemesis a long lease
// on its own lock, a majority restarts empty, and the probe asks instance 1 (the shorter one): its
// quarantine must last as long as the longest ttl any instance declared, not its own.
void mixed_max_ttl(NemesisContext& c, std::chrono::milliseconds long_ttl) {
  while (c.pause_for(1000ms)) {
    const auto lease_end = hold_lease(c, kNemesisLockName, long_ttl, /*instance=*/0);
    if (!lease_end) continue;
    const auto nodes = c.pick_nodes(3);
    c.history.note("restart-empty", "nodes " + list(nodes) + ", instance 0's long lease held");
    for (const auto n : nodes) c.cluster.node(n).restart(false);
    probe_acquire(c, kNemesisLockName, *lease_end, /*write_set=*/false, /*instance=*/1);
  }
}

// The restart must count as lossy: the AOF stopped at the switch, so the lease the nemesis took
// after it and every registry write since are gone, though the node comes back durable with its
// marker.
void persistence_off(NemesisContext& c) {
  while (c.pause_for(1000ms)) {
    const auto nodes = c.pick_nodes(3);
    for (const auto n : nodes) {
      testing::SyncRedis(c.cluster.node(n).port(), 5s)
          .command({"CONFIG", "SET", "appendonly", "no"});
    }
    c.history.note("persistence-off", "nodes " + list(nodes) + ": CONFIG SET appendonly no");
    // Longer than a settings check (every second): what the service promises to notice.
    if (!c.pause_for(1500ms)) break;
    const auto lease_end = hold_lease(c, kNemesisLockName, kNemesisLease);
    if (!lease_end) continue;
    for (const auto n : nodes) c.cluster.node(n).kill();
    for (const auto n : nodes) c.cluster.node(n).start();
    c.history.note("restart-from-files", "nodes " + list(nodes) +
                                             " (their AOF ends at the switch), the nemesis's lease "
                                             "held");
    probe_acquire(c, kNemesisLockName, *lease_end, /*write_set=*/false);
  }
}

void flags_join_leave(NemesisContext& c) {
  while (c.pause_for(500ms)) {
    // A lease of the serving instances first: what a newcomer without quarantine would grant over.
    const auto lease_end = hold_lease(c, kNemesisLockName, kNemesisLease);
    if (!lease_end) continue;
    c.history.note("join", "instance 2 (--quarantine off), instance 3 (--key-prefix other:)");
    c.cluster.start_instance(2);
    c.cluster.start_instance(3);
    const auto nodes = c.pick_nodes(3);
    c.history.note("restart-empty", "nodes " + list(nodes) + ", a lease held");
    for (const auto n : nodes) c.cluster.node(n).restart(false);
    probe_acquire(c, kNemesisLockName, *lease_end, /*write_set=*/false);
    c.history.note("leave", "instances 2 and 3 (a clean stop)");
    c.cluster.stop_instance(2);
    c.cluster.stop_instance(3);
  }
}

namespace {

// A consistent copy of the live SQLite database `from` (SQLite's backup API: what a snapshot of a
// volume gives) at `to`, replacing whatever was there. Nothing happens if `from` does not exist.
void copy_live_sqlite(const std::filesystem::path& from, const std::filesystem::path& to) {
  namespace fs = std::filesystem;
  if (!fs::exists(from)) return;
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(to.string() + suffix);
  sqlite3* source = nullptr;
  sqlite3* target = nullptr;
  if (sqlite3_open_v2(from.c_str(), &source, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK &&
      sqlite3_open(to.c_str(), &target) == SQLITE_OK) {
    sqlite3_busy_timeout(source, 2000);
    if (sqlite3_backup* backup = sqlite3_backup_init(target, "main", source, "main")) {
      while (true) {
        const int step = sqlite3_backup_step(backup, -1);
        if (step != SQLITE_BUSY && step != SQLITE_LOCKED) break;
        std::this_thread::sleep_for(10ms);
      }
      sqlite3_backup_finish(backup);
    }
  }
  sqlite3_close(target);
  sqlite3_close(source);
}

// Moves `from` (a copy made by copy_live_sqlite) over `to`, as an operator restoring a backup does.
void put_back_sqlite(const std::filesystem::path& from, const std::filesystem::path& to) {
  namespace fs = std::filesystem;
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(to.string() + suffix);
  fs::copy_file(from, to);
}

}  // namespace

void copied_token_file(NemesisContext& c) {
  const std::filesystem::path dir = c.cluster.dir();
  while (c.pause_for(milliseconds(500 + c.random() % 500))) {
    copy_live_sqlite(c.cluster.token_file(0), c.cluster.token_file(1));
    copy_live_sqlite(naive_sqlite_file(dir), naive_sqlite_copy(dir));
    c.history.note("copy-token-file", "instance 0's live file, for instance 1");
    c.cluster.start_instance(1);
    c.pause_for(milliseconds(1000 + c.random() % 1500));
    c.history.note("stop-copy", "instance 1");
    c.cluster.kill_instance(1);
  }
}

void restored_token_file(NemesisContext& c) {
  const std::filesystem::path dir = c.cluster.dir();
  const std::filesystem::path backup = dir / "tokens-backup.db";
  bool first = true;
  while (c.pause_for(500ms)) {
    copy_live_sqlite(c.cluster.token_file(0), backup);
    copy_live_sqlite(naive_sqlite_file(dir), naive_sqlite_copy(dir));
    c.history.note("back-up-token-file", "instance 0's live file");
    // First past a reservation block (1,000 tokens; the scenario draws ~400 a second), so the
    // restored file is behind what was handed out; later rounds also within one block.
    const milliseconds age = first ? 4000ms : milliseconds(300 + c.random() % 4000);
    first = false;
    if (!c.pause_for(age)) break;
    c.cluster.kill_instance(0);
    put_back_sqlite(backup, c.cluster.token_file(0));
    c.cluster.start_instance(0);
    c.history.note("restore-token-file", "instance 0 started on the backup");
    probe_acquire(c, WorkloadSettings{}.lock_name, std::chrono::steady_clock::now() + 1500ms,
                  /*write_set=*/false);
  }
}

void etcd_member_kills(NemesisContext& c) {
  bool majority = false;
  while (c.pause_for(milliseconds(500 + c.random() % 1000))) {
    std::vector<std::size_t> members;
    if (majority) {
      const std::size_t spared = c.random() % c.cluster.etcd().size();
      for (std::size_t m = 0; m < c.cluster.etcd().size(); ++m) {
        if (m != spared) members.push_back(m);
      }
    } else if (const auto leader = c.cluster.etcd().leader()) {
      members.push_back(*leader);
    }
    majority = !majority;
    if (members.empty()) continue;
    c.history.note(members.size() == 1 ? "kill-etcd-leader" : "kill-etcd-majority",
                   "members " + list(members));
    for (const auto m : members) c.cluster.etcd().kill(m);
    c.pause_for(milliseconds(500 + c.random() % 1000));
    c.history.note("start-etcd-members", list(members));
    for (const auto m : members) c.cluster.etcd().start(m);
  }
}

void etcd_wiped(NemesisContext& c) {
  while (c.pause_for(milliseconds(1500 + c.random() % 1000))) {
    c.history.note("wipe-etcd", "every member's data deleted, the cluster bootstrapped again");
    c.cluster.etcd().wipe();
    c.history.note("etcd-wiped");
  }
}

void etcd_restored(NemesisContext& c) {
  while (c.pause_for(500ms)) {
    c.history.note("back-up-etcd", "members stopped, data copied, started again");
    c.cluster.etcd().back_up();
    if (!c.pause_for(milliseconds(1500 + c.random() % 1000))) break;
    c.history.note("restore-etcd", "every member's data replaced by the backup");
    c.cluster.etcd().restore();
    c.history.note("etcd-restored");
  }
}

}  // namespace fencelock::faults
