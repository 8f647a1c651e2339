// Which fencelockd instances share these lock nodes, and whether this one may grant.
//
// Every engine keeps an entry in a registry hash on every lock node ("fencelock:#instances:" +
// key prefix, one per deployment; '#' never occurs in a lock name): its engine id → "<expiry, node
// clock ms> <token identity>", renewed every second by a script that also drops expired entries and
// returns the identities of the other live ones (lua_scripts.h). The token identity says where the
// engine's fencing tokens come from: "shared" for a store any number of instances draw from (Redis
// INCR), or the id of a store only this process draws from (the embedded SQLite file,
// EngineOptions::exclusive_tokens).
//
// Why: two instances with separate per-process counters on the same lock nodes hand out the same
// tokens (token 1 via A, 2 via A, then 1 via B). The file lock on a SQLite file only stops two
// processes on one file. So an engine with an exclusive token source grants only while
//   - its last registry round that reached a quorum of nodes started less than kFreshness ago
//     (a paused or partitioned engine must look again before it grants), and
//   - that round found no other live entry with a different identity.
// Registration and the check are one atomic script per node, and the rounds of two engines meet on
// at least one node of any two quorums, so two engines never both see the nodes empty. A later
// restart of the same instance carries the same store id and is no conflict; a clean stop removes
// the entry at once, a crash leaves it to expire (kEntryLifetime).
//
// Over time, too: the nodes are bound to a token identity (a "#tokens" field in the same hash,
// never expiring), and an engine grants only while its last quorum round found a quorum of nodes
// bound to its own identity and none bound to another — an instance started later with a fresh
// SQLite file (or a shared source after an embedded one, or the reverse) would otherwise start
// again at token 1 for names the nodes already granted. An engine binds unbound nodes only after a
// round that reached a quorum showed no node bound elsewhere and no live instance of another
// identity, and once it has seen a node bound elsewhere it never binds (nor grants) for the rest
// of its life: a misconfigured instance must not claim the nodes that lost their data, or the
// right instances would refuse too. Two quorums meet on a node, so of two engines with different
// identities at most one ever sees a quorum bound to itself. A node that loses its data loses its
// binding and is bound again by the next round of an engine that may bind; if a majority loses it
// while the rest are away, the next engine binds them (the same limit as NodeTrust's). Replacing a
// token source deliberately means deleting the field on every node (docs/operations.md).
//
// Until its first round has reached a quorum bound to it, an engine refuses with kNotYetChecked;
// a fresh cluster takes two rounds (read, then bind), the second sent at once.
//
// Limits: an engine paused between its last check and a grant for longer than kFreshness may still
// complete that one grant (as with any pause between quorum and answer; fencing tokens of the
// other instance are then the ones that may repeat — which is why the refusal exists at all).
// Threading: on the engine's strand.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "redis/redis_node.h"

namespace fencelock::storage {

class EngineCore;

class InstanceRegistry : public ReplySink, public std::enable_shared_from_this<InstanceRegistry> {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kInterval{1000};
  static constexpr std::chrono::milliseconds kRetry{100};  // after a round without a quorum
  static constexpr std::chrono::milliseconds kEntryLifetime{10'000};
  static constexpr std::chrono::milliseconds kFreshness{3000};
  // The refusal before the first round that found a quorum of nodes bound to this engine's token
  // identity (tests wait for it to go).
  static const std::string_view kNotYetChecked;

  // `exclusive_tokens`: EngineOptions::exclusive_tokens ("" = shared).
  InstanceRegistry(EngineCore& core, std::string exclusive_tokens);

  void start();
  void stop();  // removes this engine's entry (fire and forget)

  // Why this engine must not grant right now, or nullopt: lock nodes bound to another token
  // identity (any engine), no quorum bound to its own yet, or, with an exclusive source, another
  // live instance or no recent check. Safe from any thread.
  std::optional<std::string> refusal(Clock::time_point now) const;

 private:
  void round();
  void on_reply(std::size_t node, std::uint32_t cookie, NodeReply reply) override;
  void finish_round(bool reached_quorum);
  void schedule(std::chrono::milliseconds delay);

  EngineCore& core_;
  std::string identity_;
  bool exclusive_;
  std::string key_;
  boost::asio::steady_timer timer_;
  bool stopped_ = false;

  std::uint32_t round_ = 0;
  Clock::time_point round_started_{};
  std::size_t answers_ = 0, replies_ = 0;
  std::string round_conflict_;         // another identity seen in this round
  std::string round_bound_elsewhere_;  // a node bound to another identity, this round
  std::size_t round_bound_here_ = 0;   // nodes bound to this identity, this round
  bool may_bind_ = false;              // the last quorum round saw no other identity anywhere
  bool round_binds_ = false;           // this round was sent with may_bind_

  mutable std::mutex mutex_;                     // guards the two below, read from any thread
  std::optional<Clock::time_point> checked_at_;  // start of the last round that reached a quorum
  std::string conflict_;                         // what that round found ("" = none)
  std::string bound_elsewhere_;  // a node bound to another identity, seen by any round (sticky)
  bool bound_quorum_ = false;    // that round found a quorum of nodes bound to this identity
};

}  // namespace fencelock::storage
