#include "fencelock/storage/quorum.h"

#include <algorithm>
#include <stdexcept>

namespace fencelock::storage {

QuorumTally::QuorumTally(std::size_t node_count, std::size_t quorum)
    : votes_(node_count, Vote::kPending),
      voter_(node_count, true),
      quorum_(quorum),
      pending_voters_(node_count) {
  if (node_count == 0 || quorum == 0 || quorum > node_count) {
    throw std::invalid_argument("QuorumTally: need 1 <= quorum <= node_count");
  }
}

void QuorumTally::exclude(std::size_t node) {
  if (!voter_.at(node)) return;
  voter_[node] = false;
  ++excluded_;
  switch (votes_[node]) {
    case Vote::kPending:
      --pending_voters_;
      break;
    case Vote::kYes:
      --yes_;
      break;
    case Vote::kNo:
      --no_;
      break;
    case Vote::kFailed:
      --failed_;
      break;
  }
}

void QuorumTally::record(std::size_t node, Vote vote) {
  if (vote == Vote::kPending || votes_.at(node) != Vote::kPending) return;
  votes_[node] = vote;
  if (!voter_[node]) return;
  --pending_voters_;
  if (vote == Vote::kYes) ++yes_;
  if (vote == Vote::kNo) ++no_;
  if (vote == Vote::kFailed) ++failed_;
}

TallyOutcome QuorumTally::outcome() const noexcept {
  if (yes_ >= quorum_) return TallyOutcome::kReached;
  if (yes_ + pending_voters_ < quorum_) return TallyOutcome::kImpossible;
  return TallyOutcome::kUndecided;
}

std::string QuorumTally::shortfall() const {
  std::string why;
  if (failed_ > 0) why = std::to_string(failed_) + " failed or unreachable";
  if (excluded_ > 0) {
    if (!why.empty()) why += ", ";
    why += std::to_string(excluded_) + " quarantined or refused";
  }
  std::string text = "only " + std::to_string(node_count() - failed_ - excluded_) + " of " +
                     std::to_string(node_count()) + " lock nodes can vote";
  if (!why.empty()) text += " (" + why + ")";
  return text + "; a quorum of " + std::to_string(quorum()) + " is needed";
}

std::size_t QuorumTally::pending() const noexcept {
  return static_cast<std::size_t>(std::count(votes_.begin(), votes_.end(), Vote::kPending));
}

}  // namespace fencelock::storage
