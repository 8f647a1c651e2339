#include "fencelock/storage/redis_token_source.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <atomic>
#include <optional>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "epoch_file.h"
#include "redis_node.h"
#include "token_epoch_script.h"

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

// Blocking, at startup only. Returns "" when the master is durable enough, else what is wrong.
Result<std::string> check_persistence(const RedisTokenOptions& o) {
  std::unique_ptr<redisContext, void (*)(redisContext*)> c(
      redisConnectWithTimeout(o.master.host.c_str(), o.master.port, to_timeval(o.connect_timeout)), &redisFree);
  if (!c || c->err != 0) {
    return make_error(ErrorCode::kUnavailable, "token master " + o.master.to_string() +
                                                   " is unreachable: " + (c ? c->errstr : "out of memory"));
  }
  redisSetTimeout(c.get(), to_timeval(std::max(o.timeout, std::chrono::milliseconds(1000))));
  const std::string aof = config_value(c.get(), "appendonly");
  const std::string fsync = config_value(c.get(), "appendfsync");
  if (aof == "yes" && fsync == "always") return std::string();
  return "token master " + o.master.to_string() + " runs appendonly=" + (aof.empty() ? "?" : aof) +
         " appendfsync=" + (fsync.empty() ? "?" : fsync) +
         ": a crash can lose acknowledged increments (needs appendonly yes, appendfsync always)";
}

Error invalid_name() {
  return make_error(ErrorCode::kInvalidArgument,
                    "token name must be 1 to " + std::to_string(kMaxLockNameBytes) + " bytes");
}

}  // namespace

class RedisTokenSource::Impl : public NodeListener, public std::enable_shared_from_this<Impl> {
 public:
  Impl(asio::any_io_executor strand, RedisTokenOptions options, std::string warning,
       std::optional<std::uint64_t> used)
      : strand_(std::move(strand)), options_(std::move(options)), warning_(std::move(warning)),
        epoch_file_(options_.epoch_file), used_(used) {}

  void start() {
    RedisNodeOptions node;
    node.host = options_.master.host;
    node.port = options_.master.port;
    node.command_timeout = options_.timeout;
    node.connect_timeout = options_.connect_timeout;
    if (options_.regression_guard) {
      node.scripts.push_back({std::string(kTokenEpochScript), std::string(kTokenEpochScriptSha)});
    }
    node_ = std::make_shared<RedisNode>(strand_, 0, std::move(node), this);
    asio::dispatch(strand_, [self = shared_from_this()] { self->node_->start(); });
  }

  void stop() {
    asio::dispatch(strand_, [self = shared_from_this()] {
      self->stopped_ = true;
      self->epoch_ = -1;
      self->node_->stop();
    });
  }

  void draw(bool is_next, std::string_view name, Callback done) {
    if (name.empty() || name.size() > kMaxLockNameBytes) {
      asio::post(strand_, [done = std::move(done)] { done(invalid_name()); });
      return;
    }
    asio::dispatch(strand_, [self = shared_from_this(), is_next, key = options_.key_prefix + std::string(name),
                             done = std::move(done)]() mutable {
      const long long epoch = self->epoch_.load();
      if (epoch < 0) {
        asio::post(self->strand_, [done = std::move(done)] {
          done(make_error(ErrorCode::kUnavailable, "the token master is not connected"));
        });
        return;
      }
      RespCommand command(2);
      command.arg(is_next ? "INCR" : "GET").arg(key);
      self->node_->send(command, std::make_shared<DrawSink>(self, std::move(done), static_cast<std::uint64_t>(epoch)), 0);
    });
  }

  const std::string& warning() const noexcept { return warning_; }
  long long epoch() const noexcept { return epoch_.load(); }

 private:
  // Answers one INCR or GET with epoch · 2^40 + counter.
  class DrawSink final : public ReplySink {
   public:
    DrawSink(std::shared_ptr<Impl> owner, Callback done, std::uint64_t epoch)
        : owner_(std::move(owner)), done_(std::move(done)), epoch_(epoch) {}
    void on_reply(std::size_t, std::uint32_t, NodeReply reply) override {
      Result<std::uint64_t> token = make_error(ErrorCode::kUnavailable, "token master: " + describe(reply));
      if (reply.kind == NodeReply::Kind::kInteger || reply.kind == NodeReply::Kind::kNil ||
          reply.kind == NodeReply::Kind::kString) {
        std::uint64_t counter = 0;
        if (reply.kind == NodeReply::Kind::kInteger) counter = static_cast<std::uint64_t>(reply.integer);
        if (reply.kind == NodeReply::Kind::kString) counter = std::strtoull(reply.text.c_str(), nullptr, 10);
        token = counter >= kCounterLimit
                    ? Result<std::uint64_t>(make_error(ErrorCode::kInternal, "token counter exhausted in this epoch"))
                    : Result<std::uint64_t>((epoch_ << kTokenEpochShift) + counter);
      }
      asio::post(owner_->strand_, [done = std::move(done_), token = std::move(token)]() mutable {
        done(std::move(token));
      });
    }

   private:
    static std::string describe(const NodeReply& reply) {
      if (reply.kind == NodeReply::Kind::kTimeout) return "no answer in time";
      if (reply.kind == NodeReply::Kind::kDisconnected) return "disconnected";
      return reply.text.empty() ? "unexpected reply" : reply.text;
    }
    std::shared_ptr<Impl> owner_;
    Callback done_;
    std::uint64_t epoch_;
  };

  // Takes the epoch script's answer for the connection whose handshake saw `run_id`.
  class EpochSink final : public ReplySink {
   public:
    explicit EpochSink(std::shared_ptr<Impl> owner) : owner_(std::move(owner)) {}
    void on_reply(std::size_t, std::uint32_t, NodeReply reply) override {
      owner_->on_epoch(reply);
    }

   private:
    std::shared_ptr<Impl> owner_;
  };

  void on_node_ready(std::size_t, const NodeIdentity& identity) override {
    if (stopped_) return;
    if (!options_.regression_guard) {
      epoch_ = 0;
      return;
    }
    // Draws wait (fail fast) until the epoch for this incarnation is known and recorded.
    RespCommand command(6);
    command.arg("EVALSHA").arg(kTokenEpochScriptSha).arg("1").arg(kEpochKey).arg(identity.run_id)
        .arg(used_ ? static_cast<std::int64_t>(*used_) : std::int64_t{-1});
    node_->send(command, std::make_shared<EpochSink>(shared_from_this()), 0);
  }

  void on_node_down(std::size_t, const std::string&) override { epoch_ = -1; }

  void on_epoch(const NodeReply& reply) {
    if (stopped_ || reply.kind != NodeReply::Kind::kInteger || reply.integer < 0) return;  // reconnects retry
    const auto epoch = static_cast<std::uint64_t>(reply.integer);
    // Durable before the first token of this epoch leaves: a restarted fencelockd must know it.
    // A rare write (only when the epoch changes); it is a small file, not the token path.
    if (!used_ || epoch > *used_) {
      if (Status saved = epoch_file_.write(epoch); !saved.ok()) return;  // stays unavailable
      used_ = epoch;
    }
    epoch_ = static_cast<long long>(epoch);
  }

  asio::any_io_executor strand_;
  RedisTokenOptions options_;
  std::string warning_;
  EpochFile epoch_file_;
  std::optional<std::uint64_t> used_;  // highest epoch this source has drawn under (strand only)
  std::atomic<long long> epoch_{-1};
  bool stopped_ = false;
  std::shared_ptr<RedisNode> node_;
};

Result<std::shared_ptr<RedisTokenSource>> RedisTokenSource::create(asio::any_io_executor executor,
                                                                   RedisTokenOptions options) {
  if (options.timeout < std::chrono::milliseconds(1) || options.timeout > std::chrono::milliseconds(10'000)) {
    return make_error(ErrorCode::kInvalidArgument, "token timeout must be between 1 ms and 10000 ms");
  }
  if (options.regression_guard && options.epoch_file.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "the token regression guard needs an epoch file");
  }
  std::optional<std::uint64_t> used;
  if (options.regression_guard) {
    auto stored = EpochFile(options.epoch_file).read();
    if (!stored.ok()) return std::move(stored).error();
    used = stored.value();
  }
  auto problem = check_persistence(options);
  if (!problem.ok()) return std::move(problem).error();
  if (!problem.value().empty() && !options.allow_unsafe_persistence) {
    return make_error(ErrorCode::kUnavailable, problem.value() + "; refusing to start without the unsafe flag");
  }
  auto impl = std::make_shared<Impl>(asio::make_strand(std::move(executor)), std::move(options),
                                     std::move(problem).value(), used);
  impl->start();
  return std::shared_ptr<RedisTokenSource>(new RedisTokenSource(std::move(impl)));
}

RedisTokenSource::~RedisTokenSource() { stop(); }
void RedisTokenSource::stop() { impl_->stop(); }
const std::string& RedisTokenSource::persistence_warning() const noexcept { return impl_->warning(); }
void RedisTokenSource::next(std::string_view name, Callback done) { impl_->draw(true, name, std::move(done)); }
void RedisTokenSource::current(std::string_view name, Callback done) { impl_->draw(false, name, std::move(done)); }
long long RedisTokenSource::epoch() const noexcept { return impl_->epoch(); }

}  // namespace fencelock::storage
