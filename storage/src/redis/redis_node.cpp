#include "redis/redis_node.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <charconv>
#include <string_view>

#include "redis/hiredis_asio_adapter.h"

namespace fencelock::storage {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

// Handshake cookies: INFO first, the optional settings reads and probe, then one per script.
constexpr std::uint32_t kHandshakeInfo = 0;
constexpr std::uint32_t kHandshakeAppendonly = 1;
constexpr std::uint32_t kHandshakeAppendfsync = 2;
constexpr std::uint32_t kHandshakeProbe = 3;
constexpr std::uint32_t kHandshakeAuth = 4;
constexpr std::uint32_t kHandshakeMemory = 5;
constexpr std::uint32_t kHandshakeStats = 6;
// A recheck's settings reads on a ready connection.
constexpr std::uint32_t kRecheckAppendonly = 8;
constexpr std::uint32_t kRecheckAppendfsync = 9;
constexpr std::uint32_t kRecheckMemory = 10;
constexpr std::uint32_t kRecheckStats = 11;
constexpr std::uint32_t kRecheckProbe = 12;  // when the listener wants_probe_again()
constexpr std::size_t kRecheckReads = 4;
// confirm_after()'s reads: one cookie each from here up, so an answer finds its own batch.
constexpr std::uint32_t kEvictionsReadFirst = std::uint32_t{1} << 16;
constexpr std::uint32_t kHandshakeFirstScript = 16;

// CONFIG GET's answer ["name", "value"] → value; "" when refused or malformed.
std::string config_value(const NodeReply& reply) {
  if (reply.kind != NodeReply::Kind::kArray || reply.elements.size() != 2) return {};
  return reply.elements[1].text;
}

std::string info_field(std::string_view info, std::string_view field) {
  std::size_t at = 0;
  while ((at = info.find(field, at)) != std::string_view::npos) {
    const bool line_start = at == 0 || info[at - 1] == '\n';
    const std::size_t colon = at + field.size();
    if (line_start && colon < info.size() && info[colon] == ':') {
      const std::size_t end = info.find_first_of("\r\n", colon + 1);
      return std::string(
          info.substr(colon + 1, end == std::string_view::npos ? end : end - colon - 1));
    }
    at = colon;
  }
  return {};
}

// An INFO field that is a whole unsigned number; nullopt when absent or not one.
std::optional<std::uint64_t> info_number(std::string_view info, std::string_view field) {
  const std::string text = info_field(info, field);
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<std::string> eviction_risk(const NodeIdentity& identity) {
  if (!identity.maxmemory || identity.maxmemory_policy.empty()) {
    return std::string(
        "does not report its maxmemory and maxmemory_policy (INFO memory): it may evict keys");
  }
  if (*identity.maxmemory == 0 || identity.maxmemory_policy == "noeviction") return std::nullopt;
  return "may evict keys (maxmemory " + std::to_string(*identity.maxmemory) +
         ", maxmemory-policy " + identity.maxmemory_policy +
         "): an evicted lock key is a lock granted twice; set maxmemory-policy noeviction (or "
         "maxmemory 0) on every lock node";
}

std::optional<std::pair<int, int>> parse_redis_version(std::string_view version) {
  int major = 0, minor = 0;
  const char* end = version.data() + version.size();
  auto [after_major, ec1] = std::from_chars(version.data(), end, major);
  if (ec1 != std::errc() || after_major == end || *after_major != '.') return std::nullopt;
  auto [after_minor, ec2] = std::from_chars(after_major + 1, end, minor);
  if (ec2 != std::errc()) return std::nullopt;
  return std::make_pair(major, minor);
}

RedisNode::RedisNode(asio::any_io_executor strand, std::size_t index, RedisNodeOptions options,
                     NodeListener* listener)
    : strand_(std::move(strand)),
      index_(index),
      options_(std::move(options)),
      address_(options_.address.to_string()),
      listener_(listener),
      cycle_(strand_, options_.address, options_.resolve_timeout, options_.reconnect_min,
             options_.reconnect_max),
      deadline_timer_(strand_),
      recheck_timer_(strand_) {}

RedisNode::~RedisNode() {
  // stop() should have run; never leave hiredis holding a pointer to a dead node.
  free_detached(context_);
}

void RedisNode::start() {
  if (state_ == State::kStopped) return;
  cycle_.attach(weak_from_this());
  cycle_.connect();
}

void RedisNode::stop() {
  if (state_ == State::kStopped) return;
  const bool was_ready = state_ == State::kReady;
  state_ = State::kStopped;
  cycle_.stop();
  recheck_timer_.cancel();
  if (counters_.up.exchange(false) && listener_ != nullptr)
    listener_->on_node_down(index_, "engine stopped");
  listener_ = nullptr;  // nothing reaches the engine after this
  if (context_ == nullptr) {
    deadline_timer_.cancel();
  } else if (was_ready) {
    // Graceful: hiredis still writes what is queued (the releases of failed attempts), waits for
    // the answers, then closes. The deadline timer bounds the wait; on_disconnected finishes.
    redisAsyncDisconnect(context_);
  } else {
    teardown("engine stopped");
  }
}

void RedisNode::on_unresolved(const std::string& why) {
  counters_.resolve_failures.fetch_add(1, std::memory_order_relaxed);
  counters_.unresolved = true;
  if (why != last_unresolved_ && listener_ != nullptr) listener_->on_node_unresolved(index_, why);
  last_unresolved_ = why;
}

void RedisNode::on_resolved() {
  counters_.unresolved = false;
  last_unresolved_.clear();
}

void RedisNode::dial(const std::string& ip) {
  peer_ = HostPort{ip, options_.address.port}.to_string();
  std::string why;
  redisAsyncContext* context =
      open_connection(ip, options_.address.port, strand_, this, &RedisNode::on_connected,
                      &RedisNode::on_disconnected, why);
  if (context == nullptr) {
    connection_lost("connect: " + why);
    return;
  }
  context_ = context;
  state_ = State::kHandshaking;

  // Queued now, written once the socket connects. The handshake gets the connect timeout on top
  // of the command timeout; the deadline timer enforces both.
  const auto deadline = Clock::now() + options_.connect_timeout + options_.command_timeout;
  handshake_left_ = 1 + options_.scripts.size() + (options_.read_settings ? 4 : 0) +
                    (options_.probe ? 1 : 0) + (options_.credentials.empty() ? 0 : 1);
  handshake_identity_ = NodeIdentity{};
  appendonly_.clear();
  auto self = std::static_pointer_cast<ReplySink>(shared_from_this());
  if (!options_.credentials.empty()) {
    RespCommand auth(options_.credentials.username.empty() ? 2 : 3);
    auth.arg("AUTH");
    if (!options_.credentials.username.empty()) auth.arg(options_.credentials.username);
    auth.arg(options_.credentials.password);
    enqueue(auth, self, kHandshakeAuth, deadline);
  }
  enqueue(RespCommand(2).arg("INFO").arg("server"), self, kHandshakeInfo, deadline);
  if (options_.read_settings) {
    enqueue(RespCommand(3).arg("CONFIG").arg("GET").arg("appendonly"), self, kHandshakeAppendonly,
            deadline);
    enqueue(RespCommand(3).arg("CONFIG").arg("GET").arg("appendfsync"), self, kHandshakeAppendfsync,
            deadline);
    enqueue(RespCommand(2).arg("INFO").arg("memory"), self, kHandshakeMemory, deadline);
    enqueue(RespCommand(2).arg("INFO").arg("stats"), self, kHandshakeStats, deadline);
  }
  for (std::size_t i = 0; i < options_.scripts.size(); ++i) {
    enqueue(RespCommand(3).arg("SCRIPT").arg("LOAD").arg(options_.scripts[i].source), self,
            static_cast<std::uint32_t>(kHandshakeFirstScript + i), deadline);
  }
  // Last: a probe that reads what the scripts' keys hold runs on a node that passed every check.
  if (options_.probe) enqueue(*options_.probe, self, kHandshakeProbe, deadline);
}

void RedisNode::send(const RespCommand& command, std::shared_ptr<ReplySink> sink,
                     std::uint32_t cookie) {
  if (state_ != State::kReady) {
    fail_later(std::move(sink), cookie, NodeReply::Kind::kDisconnected);
    return;
  }
  counters_.commands.fetch_add(1, std::memory_order_relaxed);
  enqueue(command, std::move(sink), cookie, Clock::now() + options_.command_timeout);
}

void RedisNode::enqueue(const RespCommand& command, std::shared_ptr<ReplySink> sink,
                        std::uint32_t cookie, Clock::time_point deadline) {
  const std::uint64_t seq = next_seq_++;
  const std::string_view wire = command.wire();
  // privdata carries the sequence number so that every reply is checked against the FIFO.
  const int status = redisAsyncFormattedCommand(
      context_, &RedisNode::on_command_reply,
      reinterpret_cast<void*>(seq),  // NOLINT(performance-no-int-to-ptr): an id, never dereferenced
      wire.data(), wire.size());
  if (status != REDIS_OK) {
    fail_later(std::move(sink), cookie, NodeReply::Kind::kDisconnected);
    return;
  }
  pending_.push_back(Pending{std::move(sink), cookie, seq, deadline});
  arm_deadline_timer();
}

void RedisNode::fail_later(std::shared_ptr<ReplySink> sink, std::uint32_t cookie,
                           NodeReply::Kind kind) {
  if (!sink) return;
  asio::post(strand_, [sink = std::move(sink), cookie, kind, index = index_] {
    sink->on_reply(index, cookie, NodeReply::failure(kind, "node not connected"));
  });
}

void RedisNode::arm_deadline_timer() {
  if (pending_.empty()) return;
  const Clock::time_point deadline = pending_.front().deadline;
  // Armed for an earlier or equal time: that wake-up re-arms lazily. Armed for a later time (the
  // handshake's longer deadline): move it earlier, or a command could outlive its own deadline.
  if (deadline_armed_ && armed_until_ <= deadline) return;
  deadline_armed_ = true;
  armed_until_ = deadline;
  deadline_timer_.expires_at(deadline);  // cancels the earlier wait, if any
  deadline_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec == asio::error::operation_aborted) return;  // re-armed or stopped
    self->deadline_armed_ = false;
    self->on_deadline();
  });
}

void RedisNode::on_deadline() {
  if (pending_.empty() || context_ == nullptr) return;
  // Replies pop the front without re-arming; the timer catches up lazily here.
  if (pending_.front().deadline > Clock::now()) {
    arm_deadline_timer();
    return;
  }
  // A late wake-up (a starved event loop) can run this before the socket's read handler: take
  // whatever the node has already answered before blaming it. A read with nothing to read is a
  // no-op for hiredis; one that finds the connection closed tears it down (context_ → null).
  if (state_ == State::kReady) {
    redisAsyncHandleRead(context_);
    if (pending_.empty() || context_ == nullptr) return;
  }
  if (pending_.front().deadline > Clock::now()) {
    arm_deadline_timer();
    return;
  }
  counters_.timeouts.fetch_add(1, std::memory_order_relaxed);
  teardown(state_ == State::kReady ? "command timed out" : "connect or handshake timed out");
}

void RedisNode::teardown(const std::string& why) {
  redisAsyncContext* context = context_;
  context_ = nullptr;  // marks the disconnect as ours for on_disconnected
  const bool was_active = state_ != State::kIdle;
  if (state_ != State::kStopped) state_ = State::kIdle;
  if (context != nullptr) {
    // Answers every pending command (NULL replies → kTimeout/kDisconnected) before returning,
    // unless we are inside a hiredis callback, in which case hiredis finishes it right after.
    redisAsyncFree(context);
  }
  if (was_active) connection_lost(why);
}

void RedisNode::connection_lost(const std::string& why) {
  counters_.disconnects.fetch_add(1, std::memory_order_relaxed);
  const bool was_up = counters_.up.exchange(false);
  if (state_ == State::kStopped) {  // a stopped node never reconnects nor reports
    deadline_timer_.cancel();
    return;
  }
  state_ = State::kIdle;
  if (was_up && listener_ != nullptr) listener_->on_node_down(index_, why);
  cycle_.lost(/*was_healthy=*/was_up);
}

bool RedisNode::read_setting(std::uint32_t cookie, const NodeReply& reply, NodeIdentity& identity) {
  if (cookie == kHandshakeAppendonly || cookie == kRecheckAppendonly) {
    appendonly_ = config_value(reply);
  } else if (cookie == kHandshakeAppendfsync || cookie == kRecheckAppendfsync) {
    identity.durable = appendonly_ == "yes" && config_value(reply) == "always";
  } else if (cookie == kHandshakeMemory || cookie == kRecheckMemory) {
    identity.maxmemory = info_number(reply.text, "maxmemory");
    identity.maxmemory_policy = info_field(reply.text, "maxmemory_policy");
  } else if (cookie == kHandshakeStats || cookie == kRecheckStats) {
    identity.evicted_keys = info_number(reply.text, "evicted_keys");
    identity.commands_processed = info_number(reply.text, "total_commands_processed");
  } else {
    return false;
  }
  return true;
}

void RedisNode::schedule_recheck() {
  if (!options_.read_settings || options_.recheck_interval.count() <= 0) return;
  recheck_timer_.expires_after(options_.recheck_interval);
  recheck_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec == asio::error::operation_aborted || self->state_ != State::kReady) return;
    self->recheck();
  });
}

void RedisNode::recheck() {
  recheck_probes_ = options_.probe && listener_ != nullptr && listener_->wants_probe_again(index_);
  recheck_left_ = kRecheckReads + (recheck_probes_ ? 1 : 0);
  recheck_identity_ = identity_;
  auto self = std::static_pointer_cast<ReplySink>(shared_from_this());
  const auto deadline = Clock::now() + options_.command_timeout;
  enqueue(RespCommand(3).arg("CONFIG").arg("GET").arg("appendonly"), self, kRecheckAppendonly,
          deadline);
  enqueue(RespCommand(3).arg("CONFIG").arg("GET").arg("appendfsync"), self, kRecheckAppendfsync,
          deadline);
  enqueue(RespCommand(2).arg("INFO").arg("memory"), self, kRecheckMemory, deadline);
  enqueue(RespCommand(2).arg("INFO").arg("stats"), self, kRecheckStats, deadline);
  if (recheck_probes_) enqueue(*options_.probe, self, kRecheckProbe, deadline);
}

void RedisNode::on_recheck_reply(std::uint32_t cookie, const NodeReply& reply) {
  // An unanswered read means the connection is going (a timeout or a disconnect tears it down);
  // the next handshake reads everything again.
  if (state_ != State::kReady || recheck_left_ == 0 || !reply.answered()) {
    recheck_left_ = 0;
    return;
  }
  if (cookie == kRecheckProbe) {
    recheck_identity_.probe = reply;
  } else {
    read_setting(cookie, reply, recheck_identity_);  // an error answer: not durable, or unknown
  }
  if (--recheck_left_ != 0) return;
  identity_ = recheck_identity_;
  if (listener_ != nullptr) {
    if (const auto refusal = listener_->refusal_of(index_, identity_)) {
      refuse(*refusal);
      return;
    }
    listener_->on_node_rechecked(index_, identity_);
    if (recheck_probes_ && state_ == State::kReady) listener_->on_node_probed(index_, identity_);
  }
  schedule_recheck();
}

void RedisNode::confirm_after(std::shared_ptr<ReplySink> sink, std::uint32_t cookie) {
  if (state_ != State::kReady) {
    fail_later(std::move(sink), cookie, NodeReply::Kind::kDisconnected);
    return;
  }
  confirm_batch_.emplace_back(std::move(sink), cookie);
  if (confirm_batch_.size() == 1) {
    asio::post(strand_, [self = shared_from_this()] { self->send_evictions_read(); });
  }
}

void RedisNode::send_evictions_read() {
  Confirmations batch = std::move(confirm_batch_);
  confirm_batch_.clear();
  if (state_ != State::kReady) {
    for (auto& [sink, cookie] : batch) {
      fail_later(std::move(sink), cookie, NodeReply::Kind::kDisconnected);
    }
    return;
  }
  const std::uint32_t cookie = next_evictions_read_;
  next_evictions_read_ = cookie == UINT32_MAX ? kEvictionsReadFirst : cookie + 1;
  confirm_reads_.emplace_back(cookie, std::move(batch));
  enqueue(RespCommand(2).arg("INFO").arg("stats"),
          std::static_pointer_cast<ReplySink>(shared_from_this()), cookie,
          Clock::now() + options_.command_timeout);
}

void RedisNode::on_evictions_read(std::uint32_t cookie, const NodeReply& reply) {
  const auto read = std::find_if(confirm_reads_.begin(), confirm_reads_.end(),
                                 [cookie](const auto& entry) { return entry.first == cookie; });
  if (read == confirm_reads_.end()) return;
  Confirmations batch = std::move(read->second);
  confirm_reads_.erase(read);
  NodeReply verdict;
  if (!reply.answered() || reply.kind != NodeReply::Kind::kString) {
    verdict.kind = reply.answered() ? NodeReply::Kind::kError : reply.kind;
    verdict.text = reply.text;
  } else {
    read_setting(kRecheckStats, reply, identity_);  // the same INFO stats read as a recheck's
    verdict.kind = NodeReply::Kind::kInteger;
    const bool counts = state_ == State::kReady &&
                        (listener_ == nullptr || listener_->on_evictions_read(index_, identity_));
    verdict.integer = counts ? 1 : 0;
  }
  for (auto& [sink, caller_cookie] : batch) sink->on_reply(index_, caller_cookie, verdict);
}

void RedisNode::on_reply(std::size_t /*node*/, std::uint32_t cookie, NodeReply reply) {
  if (cookie >= kEvictionsReadFirst) {
    on_evictions_read(cookie, reply);
    return;
  }
  if (cookie >= kRecheckAppendonly && cookie <= kRecheckProbe) {
    on_recheck_reply(cookie, reply);
    return;
  }
  if (state_ != State::kHandshaking) return;  // a handshake of a connection already given up
  const bool config_read = cookie == kHandshakeAppendonly || cookie == kHandshakeAppendfsync;
  if (!reply.answered()) {
    teardown("handshake failed: " + (reply.text.empty() ? std::string("no answer") : reply.text));
    return;
  }
  if (reply.kind == NodeReply::Kind::kError &&
      !config_read) {  // CONFIG may be refused: not durable
    refuse((cookie == kHandshakeAuth ? "AUTH refused: " : "handshake failed: ") + reply.text);
    return;
  }
  if (cookie == kHandshakeAuth || read_setting(cookie, reply, handshake_identity_)) {
    // AUTH's +OK: nothing to record. A setting: read into the identity; refusal_of() judges it
    // once the handshake is complete.
  } else if (cookie == kHandshakeInfo) {
    handshake_identity_.run_id = info_field(reply.text, "run_id");
    const std::string uptime = info_field(reply.text, "uptime_in_seconds");
    long long seconds = 0;
    std::from_chars(uptime.data(), uptime.data() + uptime.size(), seconds);
    handshake_identity_.uptime = std::chrono::seconds(seconds);
    handshake_identity_.version = info_field(reply.text, "redis_version");
    if (handshake_identity_.run_id.empty()) {
      refuse("handshake failed: INFO server has no run_id");
      return;
    }
    const auto version = parse_redis_version(handshake_identity_.version);
    if (!version || *version < options_.min_version) {
      refuse("handshake failed: Redis " + handshake_identity_.version +
             " is too old; fencelock needs Redis " + std::to_string(options_.min_version.first) +
             "." + std::to_string(options_.min_version.second) + " or newer");
      return;
    }
  } else if (cookie == kHandshakeProbe) {
    handshake_identity_.probe = std::move(reply);
  } else if (reply.text != options_.scripts.at(cookie - kHandshakeFirstScript).sha) {
    refuse("handshake failed: SCRIPT LOAD answered " + reply.text + ", expected " +
           options_.scripts.at(cookie - kHandshakeFirstScript).sha);
    return;
  }
  if (--handshake_left_ != 0) return;
  if (listener_ != nullptr) {
    if (const auto refusal = listener_->refusal_of(index_, handshake_identity_)) {
      refuse(*refusal);
      return;
    }
  }
  state_ = State::kReady;
  cycle_.healthy();
  last_refusal_.clear();
  if (!last_ready_peer_.empty() && last_ready_peer_ != peer_) {
    counters_.address_changes.fetch_add(1, std::memory_order_relaxed);
    if (listener_ != nullptr) listener_->on_node_address_changed(index_, last_ready_peer_, peer_);
  }
  last_ready_peer_ = peer_;
  identity_ = handshake_identity_;
  recheck_left_ = 0;
  schedule_recheck();
  if (listener_ != nullptr) listener_->on_node_ready(index_, handshake_identity_);
  // Shown up only once the listener has taken the handshake in: a status read from another
  // thread never pairs "up" with what the engine knew of the node's previous incarnation.
  if (state_ == State::kReady) counters_.up = true;
}

void RedisNode::refuse(const std::string& why) {
  if (why != last_refusal_ && listener_ != nullptr) listener_->on_node_refused(index_, why);
  last_refusal_ = why;
  teardown(why);
}

void RedisNode::on_connected(const redisAsyncContext* context, int status) {
  auto* node = static_cast<RedisNode*>(context->data);
  if (node == nullptr || status == REDIS_OK || node->context_ != context) return;
  // hiredis frees the context right after this callback and answers the queued handshake with
  // NULL replies; on_reply ignores them because the state is no longer kHandshaking.
  node->context_ = nullptr;
  node->connection_lost(std::string("connect: ") + context->errstr);
}

void RedisNode::on_disconnected(const redisAsyncContext* context, int /*status*/) {
  auto* node = static_cast<RedisNode*>(context->data);
  if (node == nullptr || node->context_ != context) return;  // our own teardown: handled there
  node->context_ = nullptr;
  node->connection_lost(context->errstr != nullptr && context->err != 0
                            ? std::string("connection lost: ") + context->errstr
                            : std::string("connection closed by server"));
}

void RedisNode::on_command_reply(redisAsyncContext* context, void* raw_reply, void* privdata) {
  auto* node = static_cast<RedisNode*>(context->data);
  if (node == nullptr || node->pending_.empty()) return;
  Pending entry = std::move(node->pending_.front());
  node->pending_.pop_front();
  if (entry.seq != reinterpret_cast<std::uint64_t>(privdata)) {
    // Replies out of FIFO order would pair answers with the wrong commands: never trust this
    // connection again.
    if (entry.sink)
      entry.sink->on_reply(
          node->index_, entry.cookie,
          NodeReply::failure(NodeReply::Kind::kDisconnected, "reply out of order"));
    if (node->context_ == context) node->teardown("reply out of order");
    return;
  }
  NodeReply reply;
  if (raw_reply == nullptr) {
    reply = NodeReply::failure(
        Clock::now() >= entry.deadline ? NodeReply::Kind::kTimeout : NodeReply::Kind::kDisconnected,
        "no answer before the connection closed");
  } else {
    reply = NodeReply::from_hiredis(static_cast<const redisReply*>(raw_reply));
    if (reply.kind == NodeReply::Kind::kError)
      node->counters_.errors.fetch_add(1, std::memory_order_relaxed);
  }
  if (entry.sink) entry.sink->on_reply(node->index_, entry.cookie, std::move(reply));
}

}  // namespace fencelock::storage
