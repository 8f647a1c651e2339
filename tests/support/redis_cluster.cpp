#include "redis_cluster.h"

namespace fencelock::testing {

RedisCluster::RedisCluster(std::size_t count, Persistence persistence) {
  for (std::size_t i = 0; i < count; ++i) {
    servers_.push_back(
        std::make_unique<RedisServer>(dir_.path() / ("node" + std::to_string(i)), persistence));
  }
  for (auto& server : servers_) server->spawn();
  for (auto& server : servers_) {
    try {
      server->wait_ready();
    } catch (const std::runtime_error&) {
      server->start();  // retries with a new port if the picked one was taken meanwhile
    }
  }
}

std::vector<std::string> RedisCluster::addresses() const {
  std::vector<std::string> out;
  for (const auto& server : servers_) out.push_back(server->address());
  return out;
}

}  // namespace fencelock::testing
