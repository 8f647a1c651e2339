#include "engine/fences.h"

#include <algorithm>
#include <stdexcept>

namespace fencelock::storage {

std::string fence_name(std::string_view name) {
  return std::string(name) + "#fence";
}

std::optional<std::pair<std::size_t, std::uint64_t>> fence_refusal(const NodeReply& reply) {
  if (!reply.is_tagged(2, -3) && !reply.is_tagged(3, -3)) return std::nullopt;
  std::size_t index = 0;
  if (reply.elements.size() == 3) {
    const NodeReply& position = reply.elements[1];
    if (!position.is_integer() || position.integer < 1) return std::nullopt;
    index = static_cast<std::size_t>(position.integer - 1);
  }
  const std::string& text = reply.elements.back().text;
  if (!reply.elements.back().is_string() || text.empty() || text.size() > 20 ||
      text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  try {
    return std::pair{index, std::stoull(text)};
  } catch (const std::out_of_range&) {
    return std::nullopt;
  }
}

bool FenceRetries::retry_after(std::span<const std::uint64_t> tokens,
                               std::span<const std::uint64_t> fences) {
  bool behind = false;
  for (std::size_t i = 0; i < tokens.size() && i < passed_.size(); ++i) {
    if (tokens[i] <= passed_[i]) behind = true;
  }
  passed_.resize(std::max(passed_.size(), fences.size()), 0);
  for (std::size_t i = 0; i < fences.size(); ++i) passed_[i] = std::max(passed_[i], fences[i]);
  if (behind) ++behind_;
  return behind_ <= kFenceRetries && ++attempts_ <= kFenceRaces;
}

void FenceRetries::reset() {
  behind_ = 0;
  attempts_ = 0;
}

}  // namespace fencelock::storage
