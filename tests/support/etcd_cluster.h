// An etcd cluster of real `etcd` members (Debian's etcd-server) for one test, on loopback ports in
// a private temporary directory. Members can be killed and started again with their data (they
// rejoin the cluster). Destroying the cluster stops every member and removes every file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "child_process.h"
#include "temp_dir.h"

namespace fencelock::testing {

class EtcdCluster {
 public:
  // Starts `members` members (fast elections: 50 ms heartbeat, 500 ms election timeout) and waits
  // until the cluster has a leader. Throws std::runtime_error if it does not come up in 20 s.
  explicit EtcdCluster(std::size_t members = 3);
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  std::size_t size() const noexcept { return members_.size(); }
  std::uint16_t client_port(std::size_t i) const { return members_.at(i).client_port; }
  std::vector<std::string> endpoints() const;  // "127.0.0.1:port" of every member, in order
  bool running(std::size_t i) const { return members_.at(i).process->running(); }

  void kill(std::size_t i);   // SIGKILL and reap
  void start(std::size_t i);  // again, with its data: it rejoins
  // The member that leads now, as the answering members see it; nullopt if none answers.
  std::optional<std::size_t> leader();
  // What an operator may do to the whole cluster, each ending with every member running again and
  // a leader elected. All keep the cluster id (it comes from the bootstrap flags, which stay):
  //   wipe(): every member's data is deleted and the cluster bootstrapped again;
  //   back_up(): a copy of every member's data, taken with the members stopped;
  //   restore(): the data replaced by that copy (revisions go back to it).
  void wipe();
  void back_up();
  void restore();
  // Waits until some running member reports a leader and a majority is healthy.
  void wait_for_leader(std::chrono::milliseconds limit = std::chrono::seconds(20));

 private:
  struct Member {
    std::string name;
    std::uint16_t client_port = 0, peer_port = 0;
    std::unique_ptr<ChildProcess> process;
  };
  std::vector<std::string> arguments(std::size_t i) const;
  void stop_all();
  void start_all();

  TempDir dir_;  // first: removed last, after every member is stopped
  std::vector<Member> members_;
  std::string initial_cluster_;
};

}  // namespace fencelock::testing
