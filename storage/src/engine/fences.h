// What the operations that carry a token to the lock nodes share about fences (lua_scripts.h:
// "<key prefix><name>#fence", the highest token any acquire or token draw of the name wrote on a
// node): the key's name, how a node's refusal reads, and when to stop drawing again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redis/node_reply.h"

namespace fencelock::storage {

// The name of a name's fence key: "<name>#fence" — a semaphore's too. A name, not a key:
// EngineCore::key_of() adds the prefix.
std::string fence_name(std::string_view name);

// A fence refusal: {-3, fence} or, from a lock set, {-3, index (1-based), fence}. The index of the
// name (0 for a single name) and the fence; nullopt if `reply` is not one.
std::optional<std::pair<std::size_t, std::uint64_t>> fence_refusal(const NodeReply& reply);

// Attempts in a row whose fresh token was still not above a fence an earlier attempt of the call
// was refused by (the token source told to skip past it each time) before the call answers that
// the token store is behind the lock nodes. An attempt whose token was above every such fence
// only lost a race to a concurrent grant (a shared store's draws reach the nodes out of order), and
// tries again without counting — up to kFenceRaces times in a row.
inline constexpr std::uint32_t kFenceRetries = 3;
inline constexpr std::uint32_t kFenceRaces = 32;

// That rule, for one call: feed it each attempt refused by fences; it says whether to draw again.
class FenceRetries {
 public:
  // The attempt that drew `tokens` (one per name) was refused by `fences` (per name, the highest
  // fence that refused it; 0: none). True while another attempt may follow.
  bool retry_after(std::span<const std::uint64_t> tokens, std::span<const std::uint64_t> fences);
  // An attempt failed for another reason: the run of fenced attempts is over.
  void reset();

 private:
  std::vector<std::uint64_t> passed_;  // per name, the highest fence an attempt was refused by
  std::uint32_t behind_ = 0;           // attempts whose token was not above passed_
  std::uint32_t attempts_ = 0;         // fenced attempts in a row
};

}  // namespace fencelock::storage
