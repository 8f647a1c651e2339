// The clients of a campaign run, each a thread that records every operation in the History:
//
//   mutex + lock-set  acquire a lock (any instance), and while holding it do a fenced
//                     read-modify-write of a shared set in the resource store (Jepsen's lock-set:
//                     read the set with the token, add a unique element, write it back with the
//                     token); sometimes extend; release.
//   counter           draw tokens from a counter (POST /v1/tokens/{name}).
//   naive counter     (controls only) INCR on the counter master itself, no epoch guard.
//
// Every request has a timeout; every loop stops at stop() or at its deadline, whichever is first.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "cluster.h"
#include "history.h"

namespace fencelock::faults {

struct WorkloadSettings {
  std::size_t lock_clients = 4;
  std::size_t draw_clients = 1;
  // Clients drawing from a naive counter — a bare INCR on the counter master, without the epoch
  // guard of fencelock's Redis token source — for the control that shows the token checker sees
  // repeated tokens when a counter loses acknowledged writes.
  std::size_t naive_draw_clients = 0;
  std::string lock_name = "campaign-lock";
  std::string counter_name = "campaign-counter";
  std::string set_key = "campaign-set";
  std::chrono::milliseconds min_ttl{400};
  std::chrono::milliseconds max_ttl{1500};
  std::chrono::milliseconds wait{2000};
  std::chrono::milliseconds request_timeout{3000};
  std::uint64_t seed = 1;
};

class Workload {
 public:
  Workload(Cluster& cluster, History& history, WorkloadSettings settings);
  ~Workload();  // stops and joins
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;

  void start(std::chrono::steady_clock::time_point deadline);
  void stop();
  // The set as the store holds it now (an unfenced read), "" when absent.
  std::string final_set() const;

 private:
  void lock_client(int process, std::uint64_t seed);
  void draw_client(int process, std::uint64_t seed);
  void naive_draw_client(int process, std::uint64_t seed);
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
