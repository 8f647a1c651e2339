// The engine's shared state, owned jointly by the RedlockEngine handle and every operation in
// flight (so connections outlive the last operation that uses them). Everything here runs on the
// strand except the atomics read by RedlockEngine's const accessors.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/instance_registry.h"
#include "engine/list_pacer.h"
#include "engine/lock_watches.h"
#include "engine/lua_scripts.h"
#include "engine/node_trust.h"
#include "engine/waiter_queues.h"
#include "fencelock/storage/engine_observer.h"
#include "fencelock/storage/engine_options.h"
#include "fencelock/storage/quorum.h"
#include "fencelock/storage/token_source.h"
#include "redis/redis_node.h"
#include "redis/release_subscriber.h"

namespace fencelock::storage {

// Something that must be told when the engine stops (an acquire waiting between retries).
class Cancellable {
 public:
  virtual void cancel() = 0;

 public:
  virtual ~Cancellable() = default;
};

class EngineCore : public NodeListener, public std::enable_shared_from_this<EngineCore> {
 public:
  EngineCore(boost::asio::any_io_executor strand, EngineOptions options,
             std::shared_ptr<TokenSource> tokens, EngineObserver* observer);

  void start();
  // Refuses new operations and ends waiting acquires at once; operations in flight finish (their
  // releases still go out) within a grace period of twice the node timeout; then every connection
  // closes gracefully.
  void stop();
  bool stopped() const noexcept { return stopped_; }

  // Every operation brackets its life with these, so stop() knows when connections may close.
  void operation_started() noexcept { ++in_flight_; }
  void operation_finished();
  // A grant, extend or release started (listings yield to them: list_pacer.h).
  void note_foreground() noexcept { list_pacer_.note_foreground(); }
  ListPacer& list_pacer() noexcept { return list_pacer_; }

  // Runs a user's completion handler later on the strand: never inside a hiredis callback, never
  // inside the call that started the operation.
  template <class Handler, class Value>
  void complete_later(Handler handler, Value value) {
    boost::asio::post(strand_, [handler = std::move(handler), value = std::move(value)]() mutable {
      handler(std::move(value));
    });
  }

  const EngineOptions& options() const noexcept { return options_; }
  const boost::asio::any_io_executor& strand() const noexcept { return strand_; }
  TokenSource* tokens() const noexcept { return tokens_.get(); }
  EngineObserver* observer() const noexcept { return observer_; }
  std::size_t node_count() const noexcept { return nodes_.size(); }
  std::size_t quorum() const noexcept { return quorum_size(nodes_.size()); }
  std::mt19937_64& rng() noexcept { return rng_; }

  std::string key_of(std::string_view name) const;

  // Why no grant may be made now (an embedded token source and another instance on these nodes,
  // or no recent check; instance_registry.h), or nullopt. Safe from any thread.
  std::optional<std::string> grant_refusal() const;
  // InstanceRegistry's token_floor() and token_refusal(): take the floor before the draw starts.
  std::uint64_t token_floor() const;
  std::optional<std::string> token_refusal(std::uint64_t token, std::uint64_t floor) const;
  std::optional<std::string> current_refusal(std::uint64_t current, std::uint64_t floor) const;

  // Whether `node` would vote now by NodeTrust (node_trust.h): seen and not quarantined (its
  // connection is not looked at). On the strand.
  bool node_votes(std::size_t node) const;
  // The run_id of `node`'s current incarnation ("" before its first handshake). On the strand.
  std::string_view node_run_id(std::size_t node) const { return trust_.run_id(node); }

  // The registry found that `node` lost acknowledged writes while connected: it holds heartbeat
  // `holds` of this engine after acknowledging `acked`. Quarantines its incarnation from now.
  void node_lost_writes(std::size_t node, std::uint64_t holds, std::uint64_t acked);

  // A node's marker says some engine may grant leases of up to `ttl`: every quarantine, under way
  // or to come, lasts at least that long (NodeTrust::note_max_ttl; `majority`: the largest of
  // markers with this deployment's history from a majority of nodes in one round).
  void note_max_ttl(std::chrono::milliseconds ttl, bool majority);
  // The registry was out of touch with the nodes for longer than its entry lives: the longest ttl
  // is unknown until a marker with a history is read again (NodeTrust::forget_longest_ttl).
  void forget_longest_ttl();

  // The token store has a history, and the operator did not say the nodes are new
  // (NodeTrust::Settings::store_has_history).
  bool store_has_history() const { return trust_.store_has_history(); }
  // The longest ttl this engine knows any instance may grant (NodeTrust::longest_ttl). On the
  // strand.
  std::chrono::milliseconds longest_known_ttl() const;
  // grant_refusal(), and a lease of `ttl` (an acquire's, or an extend's new ttl) that another live
  // instance does not know yet (InstanceRegistry::refusal). Safe from any thread.
  std::optional<std::string> grant_refusal(std::chrono::milliseconds ttl) const;
  // Only the second part: what an extend to `ttl` checks. Safe from any thread.
  std::optional<std::string> ttl_refusal(std::chrono::milliseconds ttl) const;

  // A tally for a new operation: quarantined nodes excluded.
  QuorumTally new_tally();
  // Records in `tally` a failed vote for each voter whose connection is not ready now: a command
  // sent to it would fail at once (RedisNode::send). An operation can so tell, before it sends
  // anything, that no quorum can answer. On the strand.
  void fail_unconnected(QuorumTally& tally) const;

  // Sends one command to every node. `sink` null: fire and forget.
  void broadcast(const RespCommand& command, const std::shared_ptr<ReplySink>& sink,
                 std::uint32_t cookie);
  void send_to(std::size_t node, const RespCommand& command, const std::shared_ptr<ReplySink>& sink,
               std::uint32_t cookie);
  // Asks every node (confirm_vote: one node) to read its evictions after the commands sent to it
  // so far (RedisNode::confirm_after): `sink` gets 1 per node whose yes may count — it evicted no
  // key since this engine's last read and still votes; a node that did is quarantined first. A
  // vote is counted only once the read after it says so: a lease key evicted before the vote
  // would otherwise let a second lease be granted over the first (docs/architecture.md,
  // "Evictions").
  void confirm_votes(const std::shared_ptr<ReplySink>& sink, std::uint32_t cookie);
  void confirm_vote(std::size_t node, const std::shared_ptr<ReplySink>& sink, std::uint32_t cookie);

  // EVALSHA (or, for the NOSCRIPT fallback, EVAL) of `script` on `keys` with `args`.
  static RespCommand script_command(Script script, bool eval, std::span<const std::string> keys,
                                    std::span<const std::string> args);

  // The NOSCRIPT fallback of every operation: if `reply` says the node lost its scripts (someone
  // ran SCRIPT FLUSH), sends the EVAL form (which cannot answer NOSCRIPT) to that node with
  // `cookie` and returns true. `eval` builds that command. Callers use it once per command.
  bool resend_on_noscript(std::size_t node, const NodeReply& reply,
                          const std::function<RespCommand()>& eval,
                          const std::shared_ptr<ReplySink>& sink, std::uint32_t cookie);

  // Tells the observer (if any) how an operation ended; `tally` (may be null) gives the votes of
  // its last round.
  void report(OperationKind kind, std::optional<ErrorCode> error,
              std::chrono::steady_clock::duration elapsed, std::uint32_t attempts,
              const QuorumTally* tally, std::chrono::steady_clock::duration token_draw);

  // Compare-and-delete of the lease `value` under each of `keys` on every node (one script per
  // node), answers ignored, announced to watches only: the cleanup of a failed attempt. A key
  // whose value starts with `value` counts (a lease id alone matches a writer-waiting key).
  // `cleanup` is kReleaseSilently, or kUndoRevoke for a revoke's (keys: the lock key, then its
  // saved key; lua_revoke_scripts.h).
  void release_everywhere(std::span<const std::string> keys, std::string_view value,
                          Script cleanup = Script::kReleaseSilently);

  // Cross-instance hand-off. A waiting acquire marks the holder's value on every node that
  // refuses it (lua_scripts.h); a release that deletes a value marked by another engine publishes
  // "<release tag> <key>" on kAnnouncementChannel, and every engine subscribes to it on every
  // node. A release tag is the engine id and a release number, 16 hex digits each. A release is
  // heard up to once per node: the first copy wakes the name's first waiter, later copies go to
  // that same waiter (its attempt may have raced the release's stragglers), and an engine ignores
  // its own announcements.
  const std::string& engine_id() const noexcept { return engine_id_; }
  std::string new_release_tag();

  void track(Cancellable* operation, std::weak_ptr<Cancellable> handle);
  void untrack(Cancellable* operation);

  // The waiter queues of this engine's acquires (waiter_queues.h). On the strand.
  WaiterQueues& waiters() noexcept { return waiters_; }

  // Watches of single locks (lock_watches.h). On the strand, except LockWatches::watch().
  LockWatches& watches() noexcept { return watches_; }

  // Readable from any thread.
  std::size_t voting_nodes() const noexcept {
    return voting_nodes_.load(std::memory_order_relaxed);
  }
  bool node_quarantined(std::size_t node) const {
    return quarantined_flags_[node].load(std::memory_order_relaxed);
  }
  // A quarantined node that looks new and waits for an admission another instance may be
  // writing before it is judged (NodeTrust::kAdmissionWait): votes_again_in is when, at the latest.
  bool node_unjudged(std::size_t node) const {
    return unjudged_flags_[node].load(std::memory_order_relaxed);
  }
  // A quarantined node: how long until it votes again, as known at the last change; nullopt when
  // not quarantined, or not for a known time (fences being copied back, settings that evict).
  std::optional<std::chrono::milliseconds> votes_again_in(std::size_t node) const;
  // Why every voting node was not enough: `tally`'s shortfall, naming the quarantined nodes and
  // when the first votes again (Error::retry_after). On the strand.
  Error shortfall_error(const QuorumTally& tally) const;
  // A refusal decided before any node is asked (grant_refusal()) as an error: one for want of a
  // majority (a fresh engine's registry cannot confirm one while nodes are quarantined) names the
  // quarantined nodes and sets retry_after, as shortfall_error() does.
  Error refusal_error(std::string refusal) const;
  // Why the node's last handshake or recheck refused it, "" if its last handshake passed.
  std::string node_refusal(std::size_t node) const;
  const RedisNode& node(std::size_t i) const { return *nodes_.at(i); }

 private:
  // Appends the quarantined nodes (and when the first votes again) to `error`. On the strand.
  void explain_quarantines(Error& error) const;
  void on_announcement(std::string_view message);
  void on_node_ready(std::size_t node, const NodeIdentity& identity) override;
  void on_node_down(std::size_t node, const std::string& why) override;
  void on_node_refused(std::size_t node, const std::string& why) override;
  void on_node_rechecked(std::size_t node, const NodeIdentity& identity) override;
  // A quarantined or unjudged node's marker is read again at each recheck (NodeTrust::reread).
  bool wants_probe_again(std::size_t node) override;
  void on_node_probed(std::size_t node, const NodeIdentity& identity) override;
  // What a handshake (or a new read of the marker) says, for NodeTrust; `evicted`: it shows
  // evictions no engine recorded (evicted_unseen).
  NodeTrust::Handshake handshake_of(std::size_t node, const NodeIdentity& identity, bool& evicted);
  // Records and tells what trust_ decided on `node` from `handshake` (`admitted`: its answer).
  void took_verdict(std::size_t node, const std::vector<std::size_t>& admitted,
                    const NodeTrust::Handshake& handshake, bool evicted,
                    std::chrono::steady_clock::time_point now);
  // Logs `node`'s quarantine, unless it waits for a birth or for its verdict.
  void tell_quarantine(std::size_t node, std::chrono::steady_clock::time_point now);
  // A quarantine timer fired: judges the nodes whose wait is over, admits those whose quarantine
  // ended (NodeTrust::refresh), and records and tells it.
  void end_waits();
  bool on_evictions_read(std::size_t node, const NodeIdentity& identity) override;
  void on_node_unresolved(std::size_t node, const std::string& why) override;
  void on_node_address_changed(std::size_t node, const std::string& from,
                               const std::string& to) override;
  // Refuses a slot whose server already answers through another slot that is up (the same
  // run_id): two addresses of one server must not vote twice. Refuses a server that may evict
  // keys (eviction_risk) and tells trust_ so.
  std::optional<std::string> refusal_of(std::size_t node, const NodeIdentity& identity) override;
  void refresh_voting_count();
  void close_nodes();
  // Whether `identity` (node `node`) shows evictions no engine quarantined it for: its
  // evicted_keys differs from the last count this engine read in the same incarnation — or, at
  // its first read, from the marker's evicted record (`recorded`, "<run_id> <count>"; 0 when it
  // names another incarnation) — or its total_commands_processed went back since this engine's
  // last read (CONFIG RESETSTAT, which may hide evictions). Remembers both (the caller quarantines
  // the node when it is news; record_suspects() writes the count with the suspect record).
  bool evicted_unseen(std::size_t node, const NodeIdentity& identity, std::string_view recorded);
  // A read of a ready node's evicted_keys (a recheck, a vote's confirmation): quarantines the node
  // if it evicted keys since this engine's last read (`when` says in which read, for the log).
  void note_evictions(std::size_t node, const NodeIdentity& identity, std::string_view when);
  // `node` lost keys in its current incarnation by now (`why`): quarantined from now, recorded.
  void node_lost_keys(std::size_t node, const std::string& why);
  // Whether `node` votes: trusted (node_trust.h) and its fences in place.
  bool votes(std::size_t node, std::chrono::steady_clock::time_point now) const;
  // Records on each node that its current incarnation votes (node_trust.h, rule 2) — once its
  // fences were copied back onto it, if they may be missing (repair_fences).
  void record_admissions(const std::vector<std::size_t>& nodes);
  // Copies the fences onto `node` from the others (fence_repair.h). A strict repair lets it vote
  // and records its admission; a best-effort one (it is needed for a quorum) lets it vote here
  // only. Until a strict one succeeded for its latest loss, retry_fence_repair() tries again after
  // kFenceRepairRetry.
  void repair_fences(std::size_t node);
  void retry_fence_repair(std::size_t node);
  // Records on each node that its current incarnation is suspect (node_trust.h), with the
  // evicted_keys count this engine read there (covered by the record), and logs it.
  void record_suspects(const std::vector<std::size_t>& nodes, const std::string& why);
  // Records on each node that its fences may be missing (the marker's fences_missing), until a
  // strict repair's record_admissions() deletes it; an evident loss for every deployment there.
  void record_fence_losses(const std::vector<NodeTrust::FenceLoss>& losses);
  // `field` ("admitted:", "fences_missing:") followed by this engine's key prefix: the marker's
  // fields of one deployment (lua_scripts.h).
  std::string marker_field(std::string_view field) const;
  // Brings the quarantine flags and end-of-quarantine timers in line with trust_.
  void refresh_quarantines();
  // While a new cluster's birth waits for nodes that never answered, says which (grant_refusal).
  void note_awaited_nodes();
  // `refusal`, with the nodes a new cluster's birth waits for when it is the registry's
  // kNotYetChecked.
  std::optional<std::string> explained(std::optional<std::string> refusal) const;

  boost::asio::any_io_executor strand_;
  EngineOptions options_;
  std::shared_ptr<TokenSource> tokens_;
  EngineObserver* observer_;
  std::vector<std::shared_ptr<RedisNode>> nodes_;
  std::vector<std::shared_ptr<ReleaseSubscriber>> subscribers_;  // one per node
  std::shared_ptr<InstanceRegistry> registry_;  // made in the constructor, started by start()
  NodeTrust trust_;
  std::unique_ptr<std::atomic<bool>[]> quarantined_flags_;
  std::unique_ptr<std::atomic<bool>[]> unjudged_flags_;
  // Per node: when its quarantine ends (steady_clock ticks), 0 when none is known.
  std::unique_ptr<std::atomic<std::int64_t>[]> quarantine_ends_;
  std::vector<std::unique_ptr<boost::asio::steady_timer>> quarantine_timers_;  // one per node
  std::vector<bool> repairing_;       // per node: a fence repair is running
  std::vector<bool> partial_repair_;  // per node: its last repair was best effort
  // Per node: the loss (NodeTrust::fence_generation) its repairs are for, and when the first began.
  std::vector<std::uint64_t> repair_generation_;
  std::vector<std::chrono::steady_clock::time_point> first_repair_;
  std::atomic<std::size_t> voting_nodes_{0};
  mutable std::mutex refusals_mutex_;
  std::vector<std::string> refusals_;  // per node: node_refusal()
  std::string awaiting_birth_;         // note_awaited_nodes()
  // Per node: the incarnation (run_id) whose evicted_keys this engine read last, and that count.
  struct EvictionsSeen {
    std::string run_id;
    std::uint64_t evicted = 0;
    std::uint64_t commands = 0;  // total_commands_processed at that read
  };
  std::vector<EvictionsSeen> evictions_seen_;
  std::unordered_map<Cancellable*, std::weak_ptr<Cancellable>> waiting_;
  WaiterQueues waiters_;
  std::mt19937_64 rng_;
  std::string engine_id_;
  std::uint64_t releases_ = 0;
  bool stopped_ = false;
  bool nodes_closed_ = false;
  std::size_t in_flight_ = 0;
  boost::asio::steady_timer grace_timer_;  // bounds stop()'s wait for operations in flight
  LockWatches watches_{*this};
  ListPacer list_pacer_{strand_};
};

}  // namespace fencelock::storage
