// Quorum arithmetic for Redlock over N independent Redis masters.
//
// A decision needs a majority of the *voting* nodes' configured count: quorum = N/2 + 1 of all N
// nodes, never of the nodes that happen to be up, so two disjoint majorities cannot exist. A node
// can be excluded from voting (a restarted node in quarantine): its answers are recorded but never
// count toward the quorum, which stays N/2 + 1.
//
// QuorumTally is the pure state machine every multi-node operation runs on: feed it each node's
// answer as it arrives and it says as early as possible whether the quorum was reached or can no
// longer be reached, so an operation never waits for stragglers. Not thread-safe; a value type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fencelock::storage {

// N/2 + 1. Precondition: node_count >= 1.
constexpr std::size_t quorum_size(std::size_t node_count) noexcept {
  return node_count / 2 + 1;
}

// One node's answer to one operation.
enum class Vote : std::uint8_t {
  kPending,  // not answered yet
  kYes,      // did what was asked (SET NX succeeded, the compare-and-set matched)
  kNo,       // answered, but refused (key held by another value, or absent)
  kFailed,   // no usable answer: timeout, disconnected, error reply
};

enum class TallyOutcome : std::uint8_t {
  kUndecided,   // more answers could still change the result
  kReached,     // at least a quorum of voting nodes said yes; final
  kImpossible,  // too few voting nodes can still say yes; final
};

class QuorumTally {
 public:
  // All nodes vote until exclude() says otherwise. Precondition: 1 <= quorum <= node_count.
  QuorumTally(std::size_t node_count, std::size_t quorum);

  // Node `node` may answer but cannot count (quarantine). Call before its answer is recorded.
  void exclude(std::size_t node);

  // Records node's answer. Only the first answer of a node counts; kPending is ignored.
  void record(std::size_t node, Vote vote);

  // Monotonic: once kReached or kImpossible it stays so whatever is recorded later.
  TallyOutcome outcome() const noexcept;

  // Voting nodes that answered (yes or no): a refusal by a quorum of answering nodes means
  // "held by someone else"; fewer answering nodes means "unavailable".
  std::size_t answered_voters() const noexcept { return yes_ + no_; }
  std::size_t yes_votes() const noexcept { return yes_; }
  std::size_t failed_voters() const noexcept { return failed_; }
  std::size_t pending_voters() const noexcept { return pending_voters_; }
  // Excluded nodes plus voting nodes that failed: when more than N − quorum are unusable, the
  // quorum is out of reach whatever the others answer — the cluster is unavailable, not locked.
  std::size_t unusable() const noexcept { return excluded_ + failed_; }
  bool unavailable() const noexcept { return unusable() > votes_.size() - quorum_; }
  std::size_t pending() const noexcept;  // nodes of any kind still to answer
  std::size_t quorum() const noexcept { return quorum_; }
  std::size_t node_count() const noexcept { return votes_.size(); }
  Vote vote_of(std::size_t node) const { return votes_.at(node); }
  // Why too few answered, for an error message: "only V of N lock nodes can vote (F failed or are
  // unreachable, X quarantined or refused); a quorum of Q is needed", V = N − F − X.
  std::string shortfall() const;
  bool is_voter(std::size_t node) const { return voter_.at(node); }

 private:
  std::vector<Vote> votes_;
  std::vector<bool> voter_;
  std::size_t quorum_;
  std::size_t yes_ = 0;             // voting nodes that said yes
  std::size_t no_ = 0;              // voting nodes that said no
  std::size_t failed_ = 0;          // voting nodes that failed to answer
  std::size_t excluded_ = 0;        // nodes that do not vote
  std::size_t pending_voters_ = 0;  // voting nodes still to answer
};

}  // namespace fencelock::storage
