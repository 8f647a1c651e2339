// K independent redis-server masters for one test, each in its own subdirectory of a private
// temporary directory. Destroying the cluster stops every process and removes every file.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "redis_server.h"
#include "temp_dir.h"

namespace fencelock::testing {

class RedisCluster {
 public:
  // Starts `count` servers (all launched first, then each awaited). Throws std::runtime_error if
  // one does not come up; the ones already started are stopped.
  explicit RedisCluster(std::size_t count, Persistence persistence = Persistence::kNone);

  std::size_t size() const noexcept { return servers_.size(); }
  RedisServer& node(std::size_t i) { return *servers_.at(i); }
  std::vector<std::string> addresses() const;  // "127.0.0.1:port" of every node, in order
  const std::filesystem::path& dir() const noexcept { return dir_.path(); }

 private:
  TempDir dir_;  // declared first: destroyed last, after every server is stopped
  std::vector<std::unique_ptr<RedisServer>> servers_;
};

}  // namespace fencelock::testing
