#include "engine/expiry_wait.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <vector>

namespace fencelock::storage {

std::optional<std::chrono::milliseconds> time_until_grantable(std::span<const NodeAnswer> answers,
                                                              std::size_t quorum) {
  std::map<std::string_view, std::size_t> held_by;
  for (const NodeAnswer& answer : answers) {
    if (answer.kind == NodeAnswer::Kind::kHeld) ++held_by[answer.holder];
  }
  if (held_by.empty()) return std::nullopt;
  const auto main_holder =
      std::max_element(held_by.begin(), held_by.end(), [](const auto& a, const auto& b) {
        return a.second < b.second;
      })->first;

  std::size_t free_now = 0;
  std::vector<std::chrono::milliseconds> holder_remaining;
  for (const NodeAnswer& answer : answers) {
    if (answer.kind == NodeAnswer::Kind::kFree) ++free_now;
    if (answer.kind != NodeAnswer::Kind::kHeld) continue;
    if (answer.holder == main_holder) {
      holder_remaining.push_back(answer.remaining);
    } else {
      ++free_now;
    }
  }
  if (free_now >= quorum) return std::nullopt;  // lost to other waiters, not to a holder
  // Fewer than a quorum of one lease's keys may be another waiter's half-won attempt (a split vote
  // with a node down), deleted at once and unannounced: only the random retry delay breaks that.
  if (held_by[main_holder] < quorum) return std::nullopt;
  const std::size_t needed = quorum - free_now;
  if (needed > holder_remaining.size()) return std::nullopt;  // too few answered to tell
  std::sort(holder_remaining.begin(), holder_remaining.end());
  return holder_remaining[needed - 1] + std::chrono::milliseconds(1);
}

}  // namespace fencelock::storage
