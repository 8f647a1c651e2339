// InstanceRegistry: which fencelockd instances share these lock nodes, and whether this engine
// may grant. A heartbeat round (every kInterval; kRetry after a round without a quorum) runs one
// script per node (node_scripts.h) on "fencelock:#instances:<key prefix>": it renews this
// engine's entry (expiry and token identity, kEntryLifetime), drops expired ones, binds unbound
// nodes to one token identity (at a birth or a repair only), raises the highest token handed out,
// declares this engine's --quarantine, key prefix and longest ttl, and shows lost writes (acked()).
//
// Contract: refusal() is nullopt only while the last round in which a quorum of voting nodes
// answered is fresh (kFreshness; kSharedFreshness for a shared store) and found them bound to this
// identity, none to another (ever), no other identity live beside an exclusive store, no other
// --quarantine setting, no overlapping key prefix, and no token store that went back; before that
// round, kNotYetChecked. A lease's ttl must be covered by every live entry's longest ttl
// (ttl_refusal); a token must be above the floor taken before its draw (token_refusal: for good).
// stop() removes the entry; a crash leaves it to expire.
//
// Why: docs/architecture.md, "One instance per embedded token source", "One token store per set
// of lock nodes, over time too", "A token store that went back", "Restarted-node quarantine".
// Threading: on the engine's strand, except the refusal and floor functions (any thread).
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fencelock/storage/engine_options.h"
#include "redis/redis_node.h"
#include "redis/resp_command.h"

namespace fencelock::storage {

class EngineCore;

class InstanceRegistry : public ReplySink, public std::enable_shared_from_this<InstanceRegistry> {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kInterval{1000};
  static constexpr std::chrono::milliseconds kRetry{100};  // after a round without a quorum
  static constexpr std::chrono::milliseconds kEntryLifetime{10'000};
  static constexpr std::chrono::milliseconds kFreshness{3000};          // exclusive engines
  static constexpr std::chrono::milliseconds kSharedFreshness{10'000};  // shared engines
  // The refusal before the first round that found a quorum of nodes bound to this engine's token
  // identity (tests wait for it to go).
  static const std::string_view kNotYetChecked;

  using TokenOrder = EngineOptions::TokenOrder;
  // `exclusive_tokens`, `shared_tokens`, `token_order`: EngineOptions' fields of those names.
  InstanceRegistry(EngineCore& core, const std::string& exclusive_tokens,
                   const std::string& shared_tokens, TokenOrder token_order);

  void start();
  void stop();  // removes this engine's entry (fire and forget)

  // The registry hash on every node.
  const std::string& key() const noexcept { return key_; }
  // The number of this engine's last heartbeat that `node` answered (0: none). Every heartbeat
  // also answers the number the previous one left on the node: a smaller one means the node lost
  // writes it acknowledged (EngineCore::node_lost_writes). On the strand.
  std::uint64_t acked(std::size_t node) const;
  // Takes what `node` holds now as the starting point (its loss was handled).
  void forget_acked(std::size_t node);

  // Why this engine must not grant right now, or nullopt: lock nodes bound to another token
  // identity (any engine), no quorum bound to its own, no recent check, or, with an exclusive
  // source, another live instance. Safe from any thread.
  std::optional<std::string> refusal(Clock::time_point now) const;
  // refusal(now), and a lease of `ttl` longer than another live instance of this deployment
  // knows any instance may grant (its entry's longest ttl, as the last quorum round read it):
  // that instance would quarantine a restarted node for less than the lease lives. Safe from
  // any thread.
  std::optional<std::string> refusal(Clock::time_point now, std::chrono::milliseconds ttl) const;
  // The second part alone (an extend's check). Safe from any thread.
  std::optional<std::string> ttl_refusal(std::chrono::milliseconds ttl) const;
  // What a token drawn from now on must be above (0 = anything). Take it before the draw starts.
  // Safe from any thread.
  std::uint64_t token_floor() const;
  // refusal(now), and `token` not above `floor` (token_floor() before its draw; this refuses
  // everything from then on, for good). When nullopt, `token` counts as handed out. Safe from
  // any thread.
  std::optional<std::string> token_refusal(Clock::time_point now, std::uint64_t token,
                                           std::uint64_t floor);
  // refusal(now), and, for kGlobal, a current token read (TokenSource::current) below `floor`
  // (token_floor() before the read): a store's current token is at least every token handed out,
  // so one below the mark shows that it went back, and that refuses everything, for good. The
  // other orders' reads are per name and may lie below the mark. Safe from any thread.
  std::optional<std::string> current_refusal(Clock::time_point now, std::uint64_t current,
                                             std::uint64_t floor);

 private:
  std::optional<std::string> refusal_locked(Clock::time_point now) const;  // mutex_ held
  std::optional<std::string> ttl_refusal_locked(std::chrono::milliseconds ttl) const;  // the same
  // Sets went_back_ (mutex_ held) and tells the observer; returns `why`.
  std::string refuse_for_good(std::string why);
  RespCommand heartbeat(const char* mode) const;
  void round();
  void on_reply(std::size_t node, std::uint32_t cookie, NodeReply reply) override;
  // One other live entry on `node`, as the script returns it.
  void note_other_entry(std::size_t node, std::string_view entry);
  void finish_round();
  void schedule(std::chrono::milliseconds delay);

  EngineCore& core_;
  std::string identity_;
  bool exclusive_;
  TokenOrder token_order_;
  std::string key_;
  boost::asio::steady_timer timer_;
  bool stopped_ = false;

  // What a round may do to unbound nodes (node_scripts.h, kRegistryHeartbeatScript's ARGV[4]).
  enum class BindMode { kRead, kBirth, kRepair };

  std::uint32_t round_ = 0;
  Clock::time_point round_started_{};
  std::size_t answers_ = 0, replies_ = 0;
  std::string round_conflict_;            // another identity seen in this round
  std::string round_bound_elsewhere_;     // a node bound to another identity, this round
  std::size_t round_bound_here_ = 0;      // voting nodes bound to this identity, this round
  std::size_t round_bound_any_ = 0;       // nodes bound to this identity, voting or not
  std::size_t round_unbound_ = 0;         // nodes bound to nothing, this round
  bool round_all_voting_ = true;          // every node that answered this round votes
  std::size_t round_voting_answers_ = 0;  // answers from voting nodes, this round
  std::uint64_t round_mark_ = 0;          // the highest "#mark" any node answered, this round
  // Until when the other --quarantine setting's declaration stands, the latest any node said.
  Clock::time_point round_other_until_{};
  std::string round_overlap_;  // an overlapping key prefix some node reported, this round
  std::size_t round_history_answers_ = 0;  // answers whose marker kept this deployment's history
  std::chrono::milliseconds round_history_ttl_{0};  // the largest max ttl among those
  // The shortest longest-ttl any other live entry reports, this round (max(): none).
  std::chrono::milliseconds round_others_ttl_{std::chrono::milliseconds::max()};
  BindMode round_mode_ = BindMode::kRead;  // what this round was sent with
  BindMode next_mode_ = BindMode::kRead;   // what the next round may do, as this one found
  // Per node: the expiry of each other engine with this exclusive identity, as the last round saw
  // it, and as this round sees it.
  std::vector<std::unordered_map<std::string, std::string>> last_expiry_, round_expiry_;
  std::vector<std::uint64_t> acked_;  // per node: acked()

  // Guards the fields below; refusal() reads them from any thread. The fields above are the
  // strand's alone.
  mutable std::mutex mutex_;
  std::optional<Clock::time_point> checked_at_;  // start of the last round that reached a quorum
  std::string conflict_;                         // what that round found ("" = none)
  std::string bound_elsewhere_;      // a node bound to another identity, seen by any round (sticky)
  std::size_t bound_here_ = 0;       // voting nodes that round found bound to this identity
  bool bound_quorum_ = false;        // bound_here_ reached a quorum
  bool was_ready_ = false;           // some round found a quorum bound to this identity
  std::uint64_t mark_at_ready_ = 0;  // the highest mark seen until first ready (kAboveRestart)
  std::uint64_t mark_seen_ = 0;      // the highest mark seen by any round (kGlobal)
  std::uint64_t highest_handed_out_ = 0;  // by this engine, sent with every heartbeat
  std::string went_back_;                 // why every grant is refused for good ("" = not)
  // Until when an instance with the other --quarantine setting may grant (or its leases live).
  Clock::time_point other_setting_until_{};
  std::string overlap_;  // another deployment's live key prefix that overlaps this one's
  // Without quarantine: every node answered unbound while the token store has a history, and
  // no round found a node bound since (they all lost their data; never bound again here).
  bool forgotten_with_history_ = false;
  // round_others_ttl_ of the last round that reached a quorum.
  std::chrono::milliseconds others_ttl_{std::chrono::milliseconds::max()};
};

}  // namespace fencelock::storage
