// One persistent hiredis connection to one Redis master, shared by every operation of the engine.
//
// Commands from concurrent operations are pipelined on the single connection; Redis answers them
// in order, so pending commands form a FIFO and the oldest one always has the earliest deadline.
// One timer per node watches that oldest deadline: when it passes unanswered, the connection is
// treated as suspect (a paused or overloaded node) and replaced — every command still pending on
// it is answered kTimeout or kDisconnected at once. hiredis 0.14 has no command timeouts; these
// are ours, and they are what bounds an operation's wait on a bad node to the node timeout.
//
// Lifecycle: kIdle → kHandshaking → kReady → (timeout, error, close) → kIdle → ...; how each
// connection is made again (resolution, the next address, the backoff) is connection_cycle.h's, as
// for the release subscriber. The handshake (INFO
// server with a minimum version, optionally CONFIG GET of the persistence settings, SCRIPT LOAD of
// every script, optionally a probe command) runs on every new connection: the node counts as ready,
// and reports its identity to the listener, only after it. A send() while the node is not ready is
// answered kDisconnected, asynchronously. Optionally, a ready node's settings are read again
// periodically (RedisNodeOptions::recheck_interval) and judged by the listener as at the handshake.
//
// Threading: every member function, and every callback it makes, runs on the strand given at
// construction. The counters are atomics and may be read from any thread.
#pragma once

#include <hiredis/async.h>

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fencelock/storage/node_address.h"
#include "redis/connection_cycle.h"
#include "redis/node_reply.h"
#include "redis/resp_command.h"

namespace fencelock::storage {

// Receives the answer to a command. on_reply is called exactly once per send(), on the strand,
// never from inside send() itself.
class ReplySink {
 public:
  virtual void on_reply(std::size_t node, std::uint32_t cookie, NodeReply reply) = 0;

 public:
  virtual ~ReplySink() = default;
};

// What the handshake learned about the server behind a fresh connection.
struct NodeIdentity {
  std::string run_id;  // changes whenever the redis-server process restarts
  std::chrono::seconds uptime{0};
  std::string version;   // redis_version
  bool durable = false;  // appendonly yes + appendfsync always (only with read_settings)
  // INFO memory's maxmemory and maxmemory_policy (only with read_settings); maxmemory nullopt when
  // the server did not report it.
  std::optional<std::uint64_t> maxmemory;
  std::string maxmemory_policy;
  // INFO stats' evicted_keys (only with read_settings): keys this incarnation evicted so far;
  // nullopt when the server did not report it.
  std::optional<std::uint64_t> evicted_keys;
  // INFO stats' total_commands_processed, read with evicted_keys: CONFIG RESETSTAT sets both back
  // to 0, so a count that went back says the statistics were reset (and evictions may be hidden).
  std::optional<std::uint64_t> commands_processed;
  NodeReply probe;  // the answer to RedisNodeOptions::probe, if any
};

// Why a server with these settings may drop keys on its own (a maxmemory limit with a policy other
// than noeviction, or memory settings it did not report), or nullopt when it never evicts.
std::optional<std::string> eviction_risk(const NodeIdentity& identity);

// "7.0.15" → {7, 0}; nullopt if it does not start with "<major>.<minor>".
std::optional<std::pair<int, int>> parse_redis_version(std::string_view version);

class NodeListener {
 public:
  virtual void on_node_ready(std::size_t node, const NodeIdentity& identity) = 0;
  virtual void on_node_down(std::size_t node, const std::string& why) = 0;
  // The server answered, but the handshake refused it (too old, a script digest mismatch, an
  // error answer). Reported once per distinct reason; the node keeps retrying with backoff.
  virtual void on_node_refused(std::size_t /*node*/, const std::string& /*why*/) {}
  // Asked once the handshake passed, before the node counts as ready: a reason refuses this
  // server as on_node_refused does (reported once per distinct reason, retried with backoff).
  // The address did not resolve (or to no address): why, once per distinct reason. The node
  // stays down and tries again with backoff.
  virtual void on_node_unresolved(std::size_t /*node*/, const std::string& /*why*/) {}
  // A new connection reached another IP address than the previous one ("10.0.0.5:6379").
  virtual void on_node_address_changed(std::size_t /*node*/, const std::string& /*from*/,
                                       const std::string& /*to*/) {}
  virtual std::optional<std::string> refusal_of(std::size_t /*node*/,
                                                const NodeIdentity& /*identity*/) {
    return std::nullopt;
  }
  // A periodic re-read of a ready node's settings (RedisNodeOptions::recheck_interval) that
  // refusal_of() let pass: `identity` is the handshake's, with durable, the memory settings and
  // evicted_keys as read now.
  virtual void on_node_rechecked(std::size_t /*node*/, const NodeIdentity& /*identity*/) {}
  // Asked at each recheck: true sends RedisNodeOptions::probe again with the settings reads, and
  // on_node_probed() gets the answer (in `identity.probe`) after on_node_rechecked().
  virtual bool wants_probe_again(std::size_t /*node*/) { return false; }
  virtual void on_node_probed(std::size_t /*node*/, const NodeIdentity& /*identity*/) {}
  // An evictions read (RedisNode::confirm_after) answered: `identity` is the connection's, with
  // evicted_keys as read now. True when the commands sent before the read may count: the node
  // evicted nothing the listener had not seen, and still votes. Once per read.
  virtual bool on_evictions_read(std::size_t /*node*/, const NodeIdentity& /*identity*/) {
    return true;
  }

 public:
  virtual ~NodeListener() = default;
};

struct RedisNodeOptions {
  NodeAddress address;  // an IP address or a DNS name, resolved at every (re)connect
  // How long one resolution of a name may take before it counts as failed.
  std::chrono::milliseconds resolve_timeout{5000};
  std::chrono::milliseconds command_timeout{50};
  std::chrono::milliseconds connect_timeout{250};
  std::chrono::milliseconds reconnect_min{50};
  std::chrono::milliseconds reconnect_max{2000};
  struct ScriptToLoad {
    std::string source;
    std::string sha;  // what SCRIPT LOAD must answer; a mismatch fails the handshake
  };
  std::vector<ScriptToLoad> scripts;  // SCRIPT LOADed on every connection
  // Sent first on every connection when not empty; a refusal fails the handshake.
  RedisCredentials credentials;
  // Servers older than this (major, minor) fail the handshake with a message saying so; {0, 0}
  // accepts any version.
  std::pair<int, int> min_version{0, 0};
  // Read appendonly/appendfsync (CONFIG GET) into NodeIdentity::durable, INFO memory into its
  // memory settings and INFO stats into its evicted_keys. A server that refuses CONFIG (renamed, or
  // not allowed by its ACL) counts as not durable; INFO works everywhere, managed Redis included.
  bool read_settings = false;
  // With read_settings: how often a ready node's settings are read again (refusal_of() judges
  // them; a refusal drops the connection as at the handshake). 0 (the default): never.
  std::chrono::milliseconds recheck_interval{0};
  // Run last in every handshake, answer in NodeIdentity::probe; an error answer fails it.
  std::optional<RespCommand> probe;
};

// Monotonic counters for metrics and logs.
struct NodeCounters {
  std::atomic<std::uint64_t> commands{0};     // sent while ready
  std::atomic<std::uint64_t> errors{0};       // error replies
  std::atomic<std::uint64_t> timeouts{0};     // connections replaced because a command timed out
  std::atomic<std::uint64_t> disconnects{0};  // connections lost for any reason
  std::atomic<std::uint64_t> resolve_failures{0};  // resolutions of the name that failed
  std::atomic<std::uint64_t> address_changes{0};   // connections to another IP than the last
  std::atomic<bool> up{false};
  std::atomic<bool> unresolved{false};  // the last resolution failed
};

class RedisNode : public ReplySink,
                  public ConnectionCycle::Owner,
                  public std::enable_shared_from_this<RedisNode> {
 public:
  RedisNode(boost::asio::any_io_executor strand, std::size_t index, RedisNodeOptions options,
            NodeListener* listener);
  ~RedisNode() override;
  RedisNode(const RedisNode&) = delete;
  RedisNode& operator=(const RedisNode&) = delete;

  void start();  // begins connecting in the background
  // Stops for good: queued commands are still written and answered (bounded by the node
  // timeout), then the connection closes; no reconnects; the listener is never called again.
  void stop();

  // Sends `command`; `sink` (may be null: fire and forget) gets exactly one answer.
  void send(const RespCommand& command, std::shared_ptr<ReplySink> sink, std::uint32_t cookie);
  // Reads INFO stats's evicted_keys after every command sent so far on this connection — one read
  // per strand turn, shared by every caller in it — and answers `sink` with the integer 1 when
  // the listener's on_evictions_read() lets those commands count, 0 when not, or the read's
  // failure (kDisconnected, kTimeout). Exactly one answer, never from inside the call.
  void confirm_after(std::shared_ptr<ReplySink> sink, std::uint32_t cookie);

  bool ready() const noexcept { return state_ == State::kReady; }
  std::size_t index() const noexcept { return index_; }
  const RedisNodeOptions& options() const noexcept { return options_; }
  const NodeCounters& counters() const noexcept { return counters_; }
  // The address as configured ("redis1:6379"): what logs and metrics name the node by.
  const std::string& address() const noexcept { return address_; }
  // The IP address and port of the current or last connection ("10.0.0.5:6379"), "" before the
  // first. On the strand only.
  const std::string& peer() const noexcept { return peer_; }

 private:
  enum class State { kIdle, kHandshaking, kReady, kStopped };
  struct Pending {
    std::shared_ptr<ReplySink> sink;
    std::uint32_t cookie;
    std::uint64_t seq;
    std::chrono::steady_clock::time_point deadline;
  };

  // ConnectionCycle::Owner
  void dial(const std::string& ip) override;  // then the handshake
  bool may_dial() const override { return state_ == State::kIdle; }
  void on_unresolved(const std::string& why) override;
  void on_resolved() override;
  void enqueue(const RespCommand& command, std::shared_ptr<ReplySink> sink, std::uint32_t cookie,
               std::chrono::steady_clock::time_point deadline);
  void arm_deadline_timer();
  void on_deadline();
  void teardown(const std::string& why);  // drop the connection, answer everything, reconnect later
  void refuse(const std::string& why);    // a handshake the server failed: report, then teardown
  void connection_lost(const std::string& why);
  void fail_later(std::shared_ptr<ReplySink> sink, std::uint32_t cookie, NodeReply::Kind kind);
  void schedule_recheck();
  void recheck();              // sends the settings reads of a recheck
  void send_evictions_read();  // the read the confirm_after() calls of this strand turn wait for
  void on_evictions_read(std::uint32_t cookie, const NodeReply& reply);
  // A settings read's answer (handshake or recheck) into `identity`; false if it is no such read.
  bool read_setting(std::uint32_t cookie, const NodeReply& reply, NodeIdentity& identity);
  void on_recheck_reply(std::uint32_t cookie, const NodeReply& reply);

  // The node is its own sink for handshake replies.
  void on_reply(std::size_t node, std::uint32_t cookie, NodeReply reply) override;

  static void on_connected(const redisAsyncContext* context, int status);
  static void on_disconnected(const redisAsyncContext* context, int status);
  static void on_command_reply(redisAsyncContext* context, void* reply, void* privdata);

  boost::asio::any_io_executor strand_;
  std::size_t index_;
  RedisNodeOptions options_;
  std::string address_;
  NodeListener* listener_;

  State state_ = State::kIdle;
  ConnectionCycle cycle_;
  std::string peer_;             // "IP:port" of the connection being made or in use
  std::string last_ready_peer_;  // of the last connection that passed its handshake
  std::string last_unresolved_;  // reported to the listener; cleared once a resolution works
  redisAsyncContext* context_ = nullptr;
  std::deque<Pending> pending_;
  std::uint64_t next_seq_ = 1;
  boost::asio::steady_timer deadline_timer_;
  bool deadline_armed_ = false;
  std::chrono::steady_clock::time_point armed_until_{};

  std::size_t handshake_left_ = 0;
  NodeIdentity handshake_identity_;
  std::string appendonly_;    // CONFIG GET appendonly, until appendfsync arrives
  std::string last_refusal_;  // reported to the listener; cleared once a handshake passes
  NodeIdentity identity_;     // of the ready connection, as last read
  std::size_t recheck_left_ = 0;
  bool recheck_probes_ = false;  // this recheck sent the probe too
  // confirm_after(): the callers of this strand turn, and one batch per read in flight (FIFO).
  using Confirmations = std::vector<std::pair<std::shared_ptr<ReplySink>, std::uint32_t>>;
  Confirmations confirm_batch_;
  std::deque<std::pair<std::uint32_t, Confirmations>> confirm_reads_;  // by the read's cookie
  std::uint32_t next_evictions_read_ = std::uint32_t{1} << 16;
  NodeIdentity recheck_identity_;
  boost::asio::steady_timer recheck_timer_;
  NodeCounters counters_;
};

}  // namespace fencelock::storage
