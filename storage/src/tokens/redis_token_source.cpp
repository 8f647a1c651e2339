#include "fencelock/storage/redis_token_source.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <charconv>
#include <optional>
#include <string_view>
#include <vector>

#include "fencelock/names.h"
#include "net/resolver_override.h"
#include "redis/redis_node.h"
#include "tokens/epoch_file.h"
#include "tokens/token_epoch_script.h"

namespace fencelock::storage {

namespace asio = boost::asio;

namespace {

constexpr std::uint64_t kCounterLimit = std::uint64_t{1} << kTokenEpochShift;
constexpr const char* kEpochKey = "fencelock:token-epoch";

timeval to_timeval(std::chrono::milliseconds d) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(d.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((d.count() % 1000) * 1000);
  return tv;
}

// CONFIG GET <name> → its value, or "" when CONFIG is unavailable (renamed, ACL).
std::string config_value(redisContext* c, const char* name) {
  auto* reply = static_cast<redisReply*>(redisCommand(c, "CONFIG GET %s", name));
  std::string value;
  if (reply != nullptr && reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
      reply->element[1]->type == REDIS_REPLY_STRING) {
    value.assign(reply->element[1]->str, reply->element[1]->len);
  }
  if (reply != nullptr) freeReplyObject(reply);
  return value;
}

// The `field:value` line of an INFO answer, "" if there is none.
std::string info_field(std::string_view info, std::string_view field) {
  const std::string prefix = std::string(field) + ":";
  for (std::size_t at = info.find(prefix); at != std::string_view::npos;
       at = info.find(prefix, at + 1)) {
    if (at != 0 && info[at - 1] != '\n') continue;
    const std::size_t begin = at + prefix.size();
    return std::string(info.substr(begin, info.find_first_of("\r\n", begin) - begin));
  }
  return {};
}

// INFO memory's maxmemory and maxmemory_policy (unset when not reported). INFO works where CONFIG
// is refused.
NodeIdentity memory_settings(redisContext* c) {
  NodeIdentity identity;
  auto* reply = static_cast<redisReply*>(redisCommand(c, "INFO memory"));
  if (reply != nullptr && reply->type == REDIS_REPLY_STRING) {
    const std::string_view info(reply->str, reply->len);
    const std::string limit = info_field(info, "maxmemory");
    std::uint64_t bytes = 0;
    const auto [end, error] = std::from_chars(limit.data(), limit.data() + limit.size(), bytes);
    if (!limit.empty() && error == std::errc() && end == limit.data() + limit.size()) {
      identity.maxmemory = bytes;
    }
    identity.maxmemory_policy = info_field(info, "maxmemory_policy");
  }
  if (reply != nullptr) freeReplyObject(reply);
  return identity;
}

// The master's IP addresses for the startup check: a literal as it is, a name through the system
// resolver — blocking, which is fine before the event loop runs (bounded by resolv.conf).
Result<std::vector<std::string>> master_ips(const NodeAddress& master) {
  if (master.is_literal()) return std::vector<std::string>{master.host};
  const std::string where =
      "token master " + master.to_string() + ": cannot resolve " + master.host;
  if (const auto answer = overridden_answer(master.host)) {  // tests
    if (!answer->failure.empty())
      return make_error(ErrorCode::kUnavailable, where + ": " + answer->failure);
    return answer->addresses;
  }
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  boost::system::error_code ec;
  const auto results = resolver.resolve(master.host, std::to_string(master.port),
                                        asio::ip::tcp::resolver::numeric_service, ec);
  if (ec) return make_error(ErrorCode::kUnavailable, where + ": " + ec.message());
  std::vector<std::string> ips;
  for (const auto& entry : results) ips.push_back(entry.endpoint().address().to_string());
  return ips;
}

// Blocking, at startup only. Returns "" when the master is durable enough, else what is wrong.
// What create() reads off the master with its blocking round trip.
struct MasterCheck {
  std::string warning;        // empty, or why the master's persistence may lose increments
  bool has_counters = false;  // some name was drawn (or the scan for one ran out of time)
  bool has_epoch_record = false;
};

// The error for a blocking `command` whose `reply` (freed here; may be null) is not `expected`.
Error unanswered(redisContext* c, redisReply* reply, const RedisTokenOptions& o,
                 std::string_view command, std::string_view expected) {
  const std::string why = reply == nullptr ? std::string(c->errstr)
                          : reply->type == REDIS_REPLY_ERROR
                              ? std::string(reply->str, reply->len)
                              : "an answer that is not " + std::string(expected);
  if (reply != nullptr) freeReplyObject(reply);
  return make_error(ErrorCode::kUnavailable, "token master " + o.master.to_string() +
                                                 " did not answer " + std::string(command) + ": " +
                                                 why);
}

// `prefix` as a SCAN MATCH pattern that matches it literally, then anything.
std::string literal_prefix_pattern(std::string_view prefix) {
  std::string pattern;
  for (const char ch : prefix) {
    if (ch == '*' || ch == '?' || ch == '[' || ch == ']' || ch == '\\') pattern += '\\';
    pattern += ch;
  }
  return pattern + "*";
}

// Whether any counter under the source's prefix exists: SCAN until one is found or the scan
// ends. Past `budget` (a master holding many other keys), it answers true: assume a history.
Result<bool> any_counter(redisContext* c, const RedisTokenOptions& o,
                         std::chrono::milliseconds budget) {
  const std::string pattern = literal_prefix_pattern(o.key_prefix);
  const auto deadline = std::chrono::steady_clock::now() + budget;
  std::string cursor = "0";
  do {
    auto* reply = static_cast<redisReply*>(redisCommand(
        c, "SCAN %s MATCH %b COUNT 1000", cursor.c_str(), pattern.data(), pattern.size()));
    const bool valid = reply != nullptr && reply->type == REDIS_REPLY_ARRAY &&
                       reply->elements == 2 && reply->element[0]->type == REDIS_REPLY_STRING &&
                       reply->element[1]->type == REDIS_REPLY_ARRAY;
    if (!valid) return unanswered(c, reply, o, "SCAN", "a SCAN answer");
    cursor.assign(reply->element[0]->str, reply->element[0]->len);
    const bool found = reply->element[1]->elements > 0;
    freeReplyObject(reply);
    if (found) return true;
  } while (cursor != "0" && std::chrono::steady_clock::now() < deadline);
  return cursor != "0";
}

Result<MasterCheck> check_master(const RedisTokenOptions& o) {
  auto ips = master_ips(o.master);
  if (!ips) return std::move(ips).error();
  std::unique_ptr<redisContext, void (*)(redisContext*)> c(nullptr, &redisFree);
  std::string unreachable = o.master.host + " has no address";
  for (const std::string& ip : ips.value()) {  // the first address that answers
    c.reset(redisConnectWithTimeout(ip.c_str(), o.master.port, to_timeval(o.connect_timeout)));
    if (c && c->err == 0) break;
    unreachable = c ? c->errstr : "out of memory";
    c.reset();
  }
  if (!c) {
    return make_error(ErrorCode::kUnavailable,
                      "token master " + o.master.to_string() + " is unreachable: " + unreachable);
  }
  redisSetTimeout(c.get(), to_timeval(std::max(o.timeout, std::chrono::milliseconds(1000))));
  if (!o.credentials.empty()) {
    auto* reply = static_cast<redisReply*>(
        o.credentials.username.empty()
            ? redisCommand(c.get(), "AUTH %b", o.credentials.password.data(),
                           o.credentials.password.size())
            : redisCommand(c.get(), "AUTH %b %b", o.credentials.username.data(),
                           o.credentials.username.size(), o.credentials.password.data(),
                           o.credentials.password.size()));
    const bool refused = reply == nullptr || reply->type == REDIS_REPLY_ERROR;
    std::string why = reply == nullptr ? std::string(c->errstr)
                      : refused        ? std::string(reply->str, reply->len)
                                       : std::string();
    if (reply != nullptr) freeReplyObject(reply);
    if (refused) {
      return make_error(ErrorCode::kUnavailable,
                        "token master " + o.master.to_string() + " refused AUTH: " + why);
    }
  }
  // An evicted counter starts again from the epoch's first token while the epoch record stays:
  // tokens repeat, whatever the persistence. No flag overrides this.
  if (const auto risk = eviction_risk(memory_settings(c.get()))) {
    return make_error(ErrorCode::kUnavailable,
                      "token master " + o.master.to_string() + " " + *risk);
  }
  MasterCheck check;
  auto counters = any_counter(c.get(), o, std::chrono::milliseconds(2000));
  if (!counters.ok()) return std::move(counters).error();
  check.has_counters = counters.value();
  auto* exists = static_cast<redisReply*>(redisCommand(c.get(), "EXISTS %s", kEpochKey));
  if (exists == nullptr || exists->type != REDIS_REPLY_INTEGER)
    return unanswered(c.get(), exists, o, "EXISTS", "an integer");
  check.has_epoch_record = exists->integer != 0;
  freeReplyObject(exists);
  const std::string aof = config_value(c.get(), "appendonly");
  const std::string fsync = config_value(c.get(), "appendfsync");
  if (aof == "yes" && fsync == "always") return check;
  check.warning = "token master " + o.master.to_string() +
                  " runs appendonly=" + (aof.empty() ? "?" : aof) +
                  " appendfsync=" + (fsync.empty() ? "?" : fsync) +
                  ": a crash can lose acknowledged increments (needs appendonly yes, appendfsync "
                  "always)";
  return check;
}

Error invalid_name() {
  return make_error(ErrorCode::kInvalidArgument, std::string(kLockNameRule));
}

}  // namespace

class RedisTokenSource::Impl : public NodeListener, public std::enable_shared_from_this<Impl> {
 public:
  Impl(asio::any_io_executor strand, RedisTokenOptions options, std::string warning,
       std::optional<std::uint64_t> used, bool had_history)
      : strand_(std::move(strand)),
        options_(std::move(options)),
        warning_(std::move(warning)),
        epoch_file_(options_.epoch_file),
        used_(used),
        had_history_(had_history) {}

  bool has_history() const noexcept { return had_history_; }

  void start() {
    RedisNodeOptions node;
    node.address = options_.master;
    node.command_timeout = options_.timeout;
    node.connect_timeout = options_.connect_timeout;
    node.credentials = options_.credentials;
    if (options_.regression_guard) {
      node.scripts.push_back({std::string(kTokenEpochScript), std::string(kTokenEpochScriptSha)});
      node.scripts.push_back({std::string(kTokenDrawScript), std::string(kTokenDrawScriptSha)});
      node.scripts.push_back({std::string(kTokenSkipScript), std::string(kTokenSkipScriptSha)});
    }
    node_ = std::make_shared<RedisNode>(strand_, 0, std::move(node), this);
    asio::dispatch(strand_, [self = shared_from_this()] { self->node_->start(); });
  }

  void stop() {
    asio::dispatch(strand_, [self = shared_from_this()] {
      self->stopped_ = true;
      self->epoch_ = -1;
      self->fail_waiting("the token source is stopped");
      self->node_->stop();
    });
  }

  void draw(bool is_next, std::string_view name, Callback done) {
    if (!is_valid_lock_name(name)) {
      asio::post(strand_, [done = std::move(done)] { done(invalid_name()); });
      return;
    }
    asio::dispatch(strand_, [self = shared_from_this(),
                             request = Request{is_next, options_.key_prefix + std::string(name),
                                               std::move(done)}]() mutable {
      self->send(std::move(request));
    });
  }

  const std::string& warning() const noexcept { return warning_; }
  long long epoch() const noexcept { return epoch_.load(); }

  // Any thread. Best effort: a skip that finds no connection, a renegotiation under way or another
  // epoch recorded changes nothing, and the caller's next fenced attempt asks again.
  void skip_past(std::string_view name, std::uint64_t seen) {
    if (!options_.regression_guard || seen >= kLargestSkip || !is_valid_lock_name(name)) return;
    asio::dispatch(
        strand_, [self = shared_from_this(), key = options_.key_prefix + std::string(name), seen] {
          const long long epoch = self->epoch_.load();
          if (self->stopped_ || epoch < 0 || self->renegotiating_) return;
          constexpr std::uint64_t kCounterMask = (std::uint64_t{1} << kTokenEpochShift) - 1;
          RespCommand command(8);
          // EVAL: rare, and it cannot answer NOSCRIPT. Sent before any draw that follows the skip.
          command.arg("EVAL")
              .arg(kTokenSkipScript)
              .arg("2")
              .arg(key)
              .arg(kEpochKey)
              .arg(static_cast<std::int64_t>(epoch))
              .arg(static_cast<std::int64_t>(seen >> kTokenEpochShift))
              .arg(static_cast<std::int64_t>(seen & kCounterMask));
          self->node_->send(command, std::make_shared<IgnoredReply>(), 0);
        });
  }

 private:
  // A fence's value from 2^53 on is not a token any source made (nor exact in JavaScript).
  static constexpr std::uint64_t kLargestSkip = std::uint64_t{1} << 53;

  class IgnoredReply final : public ReplySink {
   public:
    void on_reply(std::size_t, std::uint32_t, NodeReply) override {}
  };

  // One next() or current() on its way to the master.
  struct Request {
    bool is_next = true;
    std::string key;
    Callback done;
    bool retried = false;  // already drew once under an epoch the record did not hold
    bool eval = false;     // the master forgot the script (SCRIPT FLUSH): send it whole
  };

  // Answers one draw with epoch · 2^40 + counter, or hands it back to the source when the master's
  // epoch record holds another epoch than the one it was drawn under.
  class DrawSink final : public ReplySink {
   public:
    DrawSink(std::shared_ptr<Impl> owner, Request request, std::uint64_t epoch)
        : owner_(std::move(owner)), request_(std::move(request)), epoch_(epoch) {}
    void on_reply(std::size_t, std::uint32_t, NodeReply reply) override {
      if (owner_->options_.regression_guard && !request_.eval &&
          reply.is_error_prefix("NOSCRIPT")) {
        request_.eval = true;  // EVAL cannot answer NOSCRIPT: this happens once per draw
        owner_->send(std::move(request_));
        return;
      }
      if (owner_->options_.regression_guard && reply.kind == NodeReply::Kind::kInteger &&
          reply.integer < 0) {
        owner_->on_epoch_mismatch(std::move(request_), epoch_);
        return;
      }
      Result<std::uint64_t> token =
          make_error(ErrorCode::kUnavailable, "token master: " + describe(reply));
      if (reply.kind == NodeReply::Kind::kInteger || reply.kind == NodeReply::Kind::kNil ||
          reply.kind == NodeReply::Kind::kString) {
        std::uint64_t counter = 0;
        if (reply.kind == NodeReply::Kind::kInteger)
          counter = static_cast<std::uint64_t>(reply.integer);
        if (reply.kind == NodeReply::Kind::kString)
          counter = std::strtoull(reply.text.c_str(), nullptr, 10);
        token = counter >= kCounterLimit
                    ? Result<std::uint64_t>(
                          make_error(ErrorCode::kInternal, "token counter exhausted in this epoch"))
                    : Result<std::uint64_t>((epoch_ << kTokenEpochShift) + counter);
      }
      owner_->answer(std::move(request_.done), std::move(token));
    }

   private:
    static std::string describe(const NodeReply& reply) {
      if (reply.kind == NodeReply::Kind::kTimeout) return "no answer in time";
      if (reply.kind == NodeReply::Kind::kDisconnected) return "disconnected";
      return reply.text.empty() ? "unexpected reply" : reply.text;
    }
    std::shared_ptr<Impl> owner_;
    Request request_;
    std::uint64_t epoch_;
  };

  // Takes one step of an epoch negotiation: the handshake's script answer, or — when a draw found
  // the record changed — the fresh INFO server and then the script answer.
  class EpochSink final : public ReplySink {
   public:
    enum class Step { kHandshake, kInfo, kScript };
    EpochSink(std::shared_ptr<Impl> owner, Step step, std::uint64_t connection)
        : owner_(std::move(owner)), step_(step), connection_(connection) {}
    void on_reply(std::size_t, std::uint32_t, NodeReply reply) override {
      if (connection_ != owner_->connection_) return;  // for a connection that is gone
      switch (step_) {
        case Step::kHandshake:
          owner_->adopt_epoch(reply);
          break;
        case Step::kInfo:
          owner_->on_renegotiation_info(reply);
          break;
        case Step::kScript:
          owner_->finish_renegotiation(owner_->adopt_epoch(reply));
          break;
      }
    }

   private:
    std::shared_ptr<Impl> owner_;
    Step step_;
    std::uint64_t connection_;
  };

  // Strand only. Sends `request` under the current epoch — or parks it while a renegotiation runs.
  void send(Request request) {
    const long long epoch = epoch_.load();
    if (stopped_ || epoch < 0) {
      answer(std::move(request.done),
             make_error(ErrorCode::kUnavailable, "the token master is not connected"));
      return;
    }
    if (renegotiating_) {
      waiting_.push_back(std::move(request));
      return;
    }
    if (!options_.regression_guard) {
      RespCommand command(2);
      command.arg(request.is_next ? "INCR" : "GET").arg(request.key);
      node_->send(command, std::make_shared<DrawSink>(shared_from_this(), std::move(request), 0),
                  0);
      return;
    }
    RespCommand command(7);
    if (request.eval) {
      command.arg("EVAL").arg(kTokenDrawScript);
    } else {
      command.arg("EVALSHA").arg(kTokenDrawScriptSha);
    }
    command.arg("2")
        .arg(request.key)
        .arg(kEpochKey)
        .arg(static_cast<std::int64_t>(epoch))
        .arg(request.is_next ? "next" : "current");
    node_->send(command,
                std::make_shared<DrawSink>(shared_from_this(), std::move(request),
                                           static_cast<std::uint64_t>(epoch)),
                0);
  }

  // Answers off the current call stack: a callback never runs inside next()/current().
  void answer(Callback done, Result<std::uint64_t> token) {
    asio::post(strand_, [done = std::move(done), token = std::move(token)]() mutable {
      done(std::move(token));
    });
  }

  // The record no longer holds the epoch `request` was drawn under: someone changed it (a source
  // that found it gone or from another incarnation), or the master lost it. Nothing was drawn.
  // Negotiate again on this connection, then retry the draw once; a second mismatch fails it.
  void on_epoch_mismatch(Request request, std::uint64_t drawn_under) {
    if (request.retried) {
      answer(std::move(request.done),
             make_error(ErrorCode::kUnavailable,
                        "the token master's epoch record kept changing; try again"));
      return;
    }
    request.retried = true;
    const long long epoch = epoch_.load();
    if (renegotiating_ || stopped_ || epoch < 0 ||
        static_cast<std::uint64_t>(epoch) != drawn_under) {
      // Parked behind the renegotiation under way, failed (stopped, disconnected), or sent under
      // the epoch a renegotiation since this draw left has agreed on.
      send(std::move(request));
      return;
    }
    waiting_.push_back(std::move(request));
    renegotiating_ = true;
    // INFO first: the run_id behind this connection may not be the one its handshake read (a proxy
    // may now point at another master). Negotiating with a stale run_id would make two sources
    // keep bumping the epoch past each other.
    node_->send(
        RespCommand(2).arg("INFO").arg("server"),
        std::make_shared<EpochSink>(shared_from_this(), EpochSink::Step::kInfo, connection_), 0);
  }

  void on_renegotiation_info(const NodeReply& reply) {
    std::string run_id =
        reply.kind == NodeReply::Kind::kString ? info_field(reply.text, "run_id") : std::string();
    if (run_id.empty()) {
      finish_renegotiation(false);
      return;
    }
    run_id_ = run_id;
    // EVAL, not EVALSHA: this is rare, and EVAL cannot answer NOSCRIPT.
    node_->send(
        epoch_command(true),
        std::make_shared<EpochSink>(shared_from_this(), EpochSink::Step::kScript, connection_), 0);
  }

  // The parked draws go out under the new epoch, or fail if there is none.
  void finish_renegotiation(bool agreed) {
    renegotiating_ = false;
    if (!agreed) {
      fail_waiting("the token master's epoch could not be renegotiated");
      return;
    }
    std::vector<Request> parked;
    parked.swap(waiting_);
    for (auto& request : parked) send(std::move(request));
  }

  void fail_waiting(const std::string& why) {
    std::vector<Request> parked;
    parked.swap(waiting_);
    for (auto& request : parked) {
      answer(std::move(request.done), make_error(ErrorCode::kUnavailable, why));
    }
  }

  RespCommand epoch_command(bool eval) const {
    RespCommand command(6);
    if (eval) {
      command.arg("EVAL").arg(kTokenEpochScript);
    } else {
      command.arg("EVALSHA").arg(kTokenEpochScriptSha);
    }
    command.arg("1").arg(kEpochKey).arg(run_id_).arg(used_ ? static_cast<std::int64_t>(*used_)
                                                           : std::int64_t{-1});
    return command;
  }

  void on_node_ready(std::size_t, const NodeIdentity& identity) override {
    if (stopped_) return;
    ++connection_;
    if (!options_.regression_guard) {
      epoch_ = 0;
      return;
    }
    // Draws wait (fail fast) until the epoch for this incarnation is known and recorded.
    run_id_ = identity.run_id;
    node_->send(
        epoch_command(false),
        std::make_shared<EpochSink>(shared_from_this(), EpochSink::Step::kHandshake, connection_),
        0);
  }

  void on_node_down(std::size_t, const std::string&) override {
    epoch_ = -1;
    ++connection_;  // answers still due on the old connection are ignored
    if (renegotiating_) {
      renegotiating_ = false;
      fail_waiting("the token master disconnected");
    }
  }

  // Takes the epoch script's answer; false if there is none to draw under. Leaves epoch_ as it
  // was on failure: after a handshake that is -1 (unavailable until the next connection), after a
  // renegotiation an epoch the record no longer holds, so every draw under it is refused by the
  // master and starts another attempt.
  bool adopt_epoch(const NodeReply& reply) {
    if (stopped_ || reply.kind != NodeReply::Kind::kInteger || reply.integer < 0) return false;
    const auto epoch = static_cast<std::uint64_t>(reply.integer);
    // Durable before the first token of this epoch leaves: a restarted fencelockd must know it.
    // A rare write (only when the epoch changes); it is a small file, not the token path.
    if (!used_ || epoch > *used_) {
      if (Status saved = epoch_file_.write(epoch); !saved.ok()) return false;
      used_ = epoch;
    }
    epoch_ = static_cast<long long>(epoch);
    return true;
  }

  asio::any_io_executor strand_;
  RedisTokenOptions options_;
  std::string warning_;
  EpochFile epoch_file_;
  std::optional<std::uint64_t> used_;  // highest epoch this source has drawn under (strand only)
  const bool had_history_;  // a counter on the master, or an epoch file and a wiped master
  std::atomic<long long> epoch_{-1};
  bool stopped_ = false;
  // Strand only: the run_id the epoch was negotiated for, which connection is current, and the
  // draws parked while a renegotiation runs.
  std::string run_id_;
  std::uint64_t connection_ = 0;
  bool renegotiating_ = false;
  std::vector<Request> waiting_;
  std::shared_ptr<RedisNode> node_;
};

Result<std::shared_ptr<RedisTokenSource>> RedisTokenSource::create(
    const asio::any_io_executor& executor, RedisTokenOptions options) {
  if (options.timeout < std::chrono::milliseconds(1) ||
      options.timeout > std::chrono::milliseconds(10'000)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "token timeout must be between 1 ms and 10000 ms");
  }
  if (options.regression_guard && options.epoch_file.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the token regression guard needs an epoch file");
  }
  std::optional<std::uint64_t> used;
  if (options.regression_guard) {
    auto stored = EpochFile(options.epoch_file).read();
    if (!stored.ok()) return std::move(stored).error();
    used = stored.value();
  }
  auto master = check_master(options);
  if (!master.ok()) return std::move(master).error();
  if (!master->warning.empty() && !options.allow_unsafe_persistence) {
    return make_error(ErrorCode::kUnavailable,
                      master->warning + "; refusing to start without the unsafe flag");
  }
  // An epoch file is written when the source first connects, before any draw: alone it says a
  // history only when the master lost its record (wiped), not when nothing was ever drawn.
  const bool history = master->has_counters || (used.has_value() && !master->has_epoch_record);
  auto impl = std::make_shared<Impl>(asio::make_strand(executor), std::move(options),
                                     std::move(master->warning), used, history);
  impl->start();
  return std::shared_ptr<RedisTokenSource>(new RedisTokenSource(std::move(impl)));
}

RedisTokenSource::~RedisTokenSource() {
  stop();
}
void RedisTokenSource::stop() {
  impl_->stop();
}
const std::string& RedisTokenSource::persistence_warning() const noexcept {
  return impl_->warning();
}
void RedisTokenSource::next(std::string_view name, Callback done) {
  impl_->draw(true, name, std::move(done));
}
void RedisTokenSource::current(std::string_view name, Callback done) {
  impl_->draw(false, name, std::move(done));
}
void RedisTokenSource::skip_past(std::string_view name, std::uint64_t seen) {
  impl_->skip_past(name, seen);
}
bool RedisTokenSource::has_history() const {
  return impl_->has_history();
}
TokenTraits RedisTokenSource::traits() const {
  return {TokenTraits::Order::kPerName, "redis", "", ""};
}
long long RedisTokenSource::epoch() const noexcept {
  return impl_->epoch();
}

}  // namespace fencelock::storage
