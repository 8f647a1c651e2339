// A blocking Redis client for test assertions (what is on a node right now), never for the code
// under test. Each call has a timeout so that a paused node cannot hang a test.
#pragma once

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/node_reply.h"

struct redisContext;

namespace fencelock::testing {

// The engine's own reply type: answers of a dead or silent node are kDisconnected (answered()
// is false), with the reason in text.
using SyncReply = storage::NodeReply;

class SyncRedis {
 public:
  // Connects to 127.0.0.1:port. A failed connection is not an error here: every command then
  // answers kDisconnected, which is what a test of a dead node wants to see.
  explicit SyncRedis(std::uint16_t port,
                     std::chrono::milliseconds timeout = std::chrono::milliseconds(1000));
  // The same on another loopback address ("127.0.0.2").
  SyncRedis(const std::string& host, std::uint16_t port,
            std::chrono::milliseconds timeout = std::chrono::milliseconds(1000));
  ~SyncRedis();
  SyncRedis(const SyncRedis&) = delete;
  SyncRedis& operator=(const SyncRedis&) = delete;

  SyncReply command(std::initializer_list<std::string_view> args);
  SyncReply command(const std::vector<std::string>& args);

  // The next reply nobody asked for (a pub/sub message after SUBSCRIBE), or kDisconnected once the
  // timeout passes — after which this connection answers nothing more.
  SyncReply receive();

  // Conveniences for the questions tests ask most.
  bool ping();  // true iff PONG came back in time
  std::optional<std::string> get(std::string_view key);
  std::int64_t dbsize();  // -1 when the node does not answer
  // Live keys matching `pattern` (KEYS: unlike DBSIZE, never counts an expired key), leaving out
  // fence keys ("…#fence", kept for good); -1 when the node does not answer. The default counts
  // lock keys, not the node's fencelock marker.
  std::int64_t count_keys(std::string_view pattern = "fencelock:lock:*");
  // The fence of `name` on this node (the highest token an acquire of it wrote here), if any.
  std::optional<std::uint64_t> fence(std::string_view name,
                                     std::string_view prefix = "fencelock:lock:");
  std::string info_field(std::string_view section, std::string_view field);  // "" if absent

 private:
  SyncReply run(std::vector<const char*>& argv, const std::vector<std::size_t>& lengths);
  std::unique_ptr<redisContext, void (*)(redisContext*)> context_;
};

}  // namespace fencelock::testing
