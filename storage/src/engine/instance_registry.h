// Which fencelockd instances share these lock nodes, and whether this one may grant.
//
// Every engine keeps an entry in a registry hash on every lock node ("fencelock:#instances:" +
// key prefix, one per deployment; '#' never occurs in a lock name): its engine id → "<expiry, node
// clock ms> <token identity>", renewed every second by a script that also drops expired entries and
// returns the identities of the other live ones (lua_scripts.h). The token identity says where the
// engine's fencing tokens come from: "shared" for the Redis INCR store any number of instances draw
// from, the id of another shared store ("etcd:<cluster id>", EngineOptions::shared_tokens), or the
// id of a store only this process draws from (the embedded SQLite file,
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
// never expiring), and an engine grants only while its last quorum round found a quorum of
// *voting* nodes (node_trust.h) bound to its own identity and none bound to another — an instance
// started later with a fresh SQLite file (or a shared source after an embedded one, or the
// reverse) would otherwise start again at token 1 for names the nodes already granted. Evidence
// comes only from nodes the engine lets vote: a quarantined node may have lost its binding along
// with its keys, so its "unbound" proves nothing. A round may bind unbound nodes in two cases,
// decided by the round just before it (a round that could not decide sends a plain read):
//   - Birth: every configured node answered, every one votes, none is bound elsewhere and no live
//     instance of another identity is on any of them. Like NodeTrust's new-cluster rule, every
//     node must answer, so another store can take the nodes over only if *every* node lost its
//     binding (and a node that lost its data cannot be told from a new one, whatever the operator
//     says). The script re-checks per node that
//     no live instance of another identity is there (the read and the bind are two round trips).
//   - Repair: some node answered bound to this identity and none bound elsewhere. The two rules
//     keep every binding on the nodes naming one identity (a first binding needs every node to
//     answer unbound; a repair needs a binding of its own), so a node bound to this identity means
//     no node is bound to another, and forgotten nodes — quarantined or not — are bound again
//     whatever else is live. The one exception is the limit below: every node lost its data.
// Once an engine has seen a node bound elsewhere — in any round, quorum or not, voting or not — it
// never binds nor grants again for the rest of its life: a misconfigured instance must not claim
// nodes that lost their data, or the right instances would refuse too. A node that loses its data
// loses its binding; it is repaired by the next round of an engine of the right identity, so a
// binding survives any number of losses as long as one node keeps it until such an engine runs.
// Replacing a token source deliberately means deleting the field on every node
// (docs/operations.md).
//
// Until its first round has found a quorum bound to it, an engine refuses with kNotYetChecked (and,
// while a new cluster waits for a node, which: EngineCore::grant_refusal); a fresh cluster takes
// two rounds (read, then bind), the second sent at once. An engine that was
// ready and later finds fewer than a quorum bound to it refuses with another reason.
//
// How many nodes are bound is judged only from rounds in which a quorum of voting nodes answered
// (a late answer is not a forgotten binding). The verdict is checked when an acquire starts and
// again once its token has been drawn, just before the grant is answered. A verdict goes stale:
// an exclusive engine's after kFreshness, a shared engine's after kSharedFreshness, without a
// round that reached a quorum.
//
// Limits: an engine paused between its last check and a grant for longer than kFreshness may still
// complete that one grant (as with any pause between quorum and answer; fencing tokens of the
// other instance are then the ones that may repeat — which is why the refusal exists at all).
// Copies of one SQLite token file carry one store id. Two copies running together are caught: an
// exclusive engine treats another engine with its own identity whose entry is renewed between two
// of its rounds as a conflict (a crashed predecessor's entry is not renewed).
//
// A token store that went back — a SQLite file restored from a backup, an etcd cluster restored
// from a snapshot — keeps its identity. Unless EngineOptions::token_order is kPerName, the nodes
// also remember the highest token handed out through them (a "#mark" field, raised by every
// heartbeat, and by a clean stop, to the highest token its engine handed out), and a token is
// checked against a floor taken before its draw started (token_floor(); a token at or below it
// refuses every grant, for good):
//   - kAboveRestart (SQLite: per-name counters, all started above the file's durable reservation
//     at open): the highest mark seen until the engine first became ready. Every token it draws
//     afterwards is above every token handed out before it opened the file.
//   - kGlobal (etcd revisions): the highest mark seen so far, by any round. A mark is a token
//     answered before the round that read it, which ended before this draw started, so a correct
//     store never trips it — and an instance that drew nothing since a snapshot trips it on its
//     first draw after the restore, where its own "revision went back" check sees nothing.
// Limit: tokens handed out in the last heartbeat interval before the store went back are not yet
// in the mark; a store restored to within that second is not caught by an instance that did not
// draw through the loss.
//
// Instances that disagree on --quarantine (EngineOptions::quarantine_restarted_nodes): one
// without it trusts a restarted node at once, so it would grant over a lease that one with it
// granted, once a majority lost that lease's key. Every heartbeat declares this engine's setting
// on the node, until a node-clock time: "#quarantine:on", for as long as such an engine may grant
// after its last heartbeat plus its longest lease; "#quarantine:off:<engine id>", one per engine,
// for as long as it may grant after its last heartbeat (deleted by its clean stop, and by any
// heartbeat once expired). An engine refuses every grant while any node shows the other
// setting's declaration standing (one node's word is enough): both refuse until the other stops.
// "on" is refused until the time it declared; "off" until a quorum round no longer shows any, or
// its time. The declarations are lost with a node's data; nodes that *all* lost theirs are never
// bound by an engine without quarantine while its token store has a history (it would otherwise
// be born there with nothing to consult): it refuses until the operator says the nodes are new.
//
// Deployments whose key prefixes overlap ("app:" and "app:x:") share lock keys but not
// registries, so nothing above would see the other: every heartbeat also keeps its prefix live in
// the node marker (shared by every prefix) and learns of a live prefix that starts with its own or
// that its own starts with; both deployments then refuse every grant until one goes.
//
// Instances with different --max-ttl: each entry also says the longest ttl its engine knows any
// instance may grant (NodeTrust::longest_ttl: the markers' largest max ttl and its own). An engine
// grants or extends a lease only for a ttl every other live entry of the last quorum round
// covers, so an instance with a shorter --max-ttl has read the longer one (and keeps it: the value
// is never lowered) before any lease that long exists — and quarantines restarted nodes for that
// long, even if every node that carried the longer value loses its data.
//
// Lock nodes that went back: every heartbeat also leaves a growing number of its engine on the
// node ("#seq:<engine id>") and answers the one the previous heartbeat left; less than the node
// acknowledged means it lost writes (EngineCore::node_lost_writes, node_trust.h). And it raises
// the node marker's max ttl to this engine's and answers it (EngineCore::note_max_ttl).
// Threading: on the engine's strand, except refusal().
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

  // What a round may do to unbound nodes (lua_scripts.h, kRegistryHeartbeatScript's ARGV[4]).
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
