// The clients of a campaign run, each a thread that records every operation in the History:
//
//   mutex + lock-set  acquire a lock (any instance), and while holding it do a fenced
//                     read-modify-write of a shared set in the resource store (Jepsen's lock-set:
//                     read the set with the token, add a unique element, write it back with the
//                     token); sometimes extend; release.
//   revoke            every 300-1200 ms, revoke the mutex lock (POST /v1/locks/{name}/revoke, any
//                     instance) whoever holds it; when granted, the same lock-set step with the
//                     revoke's token, then release. The revoked holder's late write must be fenced
//                     off by the store (the store and set checkers).
//   repeat            acquire the mutex lock with a fresh request_id and, six times in ten, ask
//                     again with the same one as a client whose answer was lost would: after the
//                     answer (at once or after a short random delay, through any instance), or at
//                     the same moment on a second connection (as process + 1). Every answer is
//                     recorded as an acquire of its own; then the lock-set step with the grant
//                     answered last, and a release of every lease answered.
//   listing           holds one of its own names (`listed_names` of them, under `list_prefix`, so
//                     most are free at any time; ttl 2 s, no wait), and while holding it lists the
//                     prefix twice, `list_limit` names a page, following `next` to the end; a
//                     listing a 503 or a lost answer cuts short is recorded as such and started
//                     again. Then it releases its name.
//   rwlock            a read/write lock (POST /v1/rwlocks/{name}), every third attempt in write
//   mode (each client at its own offset):
//                     a writer does the lock-set step on a set of its own (`rw_set_key`, fenced
//                     by the read/write lock's tokens), a reader a fenced read of it and holds a
//                     while; sometimes extend; release. Checked as leases (a read may overlap
//                     only reads), tokens (reads and writes in one order) and set.
//   counter           draw tokens from a counter (POST /v1/tokens/{name}).
//   naive counter     (controls only) a counter with nothing keeping its order but itself: INCR
//                     on the counter master, or an SQLite file and the copies the nemesis makes.
//
// Every request has a timeout; every loop stops at stop() or at its deadline, whichever is first.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "cluster.h"
#include "history.h"

namespace fencelock::faults {

// The naive counters of the controls that show the token checker sees repeated tokens when a
// counter loses acknowledged writes or is copied.
enum class NaiveCounter {
  kNone,
  // A bare INCR on the counter master, without the epoch guard of fencelock's Redis token source.
  kRedisIncr,
  // An SQLite file, DIR/naive.db, drawn from in turn with its copy DIR/naive-copy.db once the
  // nemesis made one (naive_sqlite_files): what a copied or restored token file hands out with
  // no lock node fence behind it.
  kSqliteFiles,
};

struct WorkloadSettings {
  std::size_t lock_clients = 4;
  std::size_t draw_clients = 1;
  std::size_t revoke_clients = 1;
  // Each takes two process numbers: its own and its concurrent repeats'.
  std::size_t repeat_clients = 1;
  std::size_t listing_clients = 1;
  std::size_t rw_clients = 2;
  // The listing's prefix covers every lock name of the campaign; its client holds list_prefix +
  // "listed-" + 0..listed_names-1.
  std::string list_prefix = "campaign-";
  std::size_t listed_names = 12;
  std::size_t list_limit = 1;
  // Not kNone: one client draws from that naive counter instead of the draw clients.
  NaiveCounter naive_counter = NaiveCounter::kNone;
  std::string lock_name = "campaign-lock";
  std::string counter_name = "campaign-counter";
  std::string set_key = "campaign-set";
  std::string rw_lock_name = "campaign-rwlock";
  std::string rw_set_key = "campaign-rwset";
  std::chrono::milliseconds min_ttl{400};
  std::chrono::milliseconds max_ttl{1500};
  std::chrono::milliseconds wait{2000};
  std::chrono::milliseconds request_timeout{3000};
  std::uint64_t seed = 1;
};

// The files of NaiveCounter::kSqliteFiles in `dir`: the counter and the copy a nemesis makes of it.
std::filesystem::path naive_sqlite_file(const std::filesystem::path& dir);
std::filesystem::path naive_sqlite_copy(const std::filesystem::path& dir);

class Workload {
 public:
  Workload(Cluster& cluster, History& history, WorkloadSettings settings);
  ~Workload();  // stops and joins
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  void start(std::chrono::steady_clock::time_point deadline);
  void stop();
  // Per set key (`set_key`, `rw_set_key`): the set as the store holds it now (an unfenced
  // read), "" when absent.
  std::map<std::string, std::string> final_sets() const;

 private:
  void lock_client(int process, std::uint64_t seed);
  void revoke_client(int process, std::uint64_t seed);
  void repeat_client(int process, std::uint64_t seed);
  void listing_client(int process, std::uint64_t seed);
  void rw_client(int process, std::uint64_t seed);
  // Sleeps `d`, in steps, while running(); false once it is not.
  bool sleep_while_running(std::chrono::milliseconds d) const;
  void draw_client(int process, std::uint64_t seed);
  void naive_draw_client(int process, std::uint64_t seed);
  void naive_sqlite_client(int process, std::uint64_t seed);
  bool running() const;

  Cluster& cluster_;
  History& history_;
  WorkloadSettings settings_;
  std::atomic<bool> stop_{false};
  std::chrono::steady_clock::time_point deadline_;
  std::uint16_t counter_port_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace fencelock::faults
