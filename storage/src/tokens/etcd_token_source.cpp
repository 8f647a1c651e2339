#include "fencelock/storage/etcd_token_source.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <deque>
#include <optional>
#include <unordered_set>

#include "fencelock/names.h"
#include "tokens/etcd_connection.h"
#include "tokens/etcd_wire.h"

namespace fencelock::storage {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::string_view kTxnTarget = "/v3/kv/txn";
constexpr std::string_view kRangeTarget = "/v3/kv/range";
constexpr std::string_view kStatusTarget = "/v3/maintenance/status";

std::optional<std::string> options_problem(const EtcdTokenOptions& o) {
  if (o.endpoints.empty() || o.endpoints.size() > kMaxLockNodes) {
    return "etcd endpoints: 1 to " + std::to_string(kMaxLockNodes) + " are needed";
  }
  if (o.timeout < std::chrono::milliseconds(1) || o.timeout > std::chrono::seconds(60)) {
    return "etcd timeout: must be 1 ms .. 60 s";
  }
  if (o.key_prefix.empty() || o.key_prefix.size() > 128) {
    return "etcd key prefix: must be 1 to 128 bytes";
  }
  if (o.max_queued < 1 || o.max_queued > 1'000'000) {
    return "etcd max queued draws: must be 1 .. 1,000,000";
  }
  return std::nullopt;
}

// The cluster id, from one endpoint, blocking (startup only).
Result<std::string> cluster_id_of(const NodeAddress& endpoint, std::chrono::milliseconds timeout) {
  asio::io_context io(1);
  auto connection = std::make_shared<etcd::Connection>(io.get_executor(), endpoint);
  std::optional<Result<std::string>> outcome;
  connection->post(kStatusTarget, std::string(etcd::kStatusBody), timeout,
                   [&](Result<etcd::Answer> answer) {
                     if (!answer.ok()) {
                       outcome.emplace(answer.error());
                       return;
                     }
                     auto header = etcd::read_header(answer->status, answer->body);
                     if (!header.ok()) {
                       outcome.emplace(header.error());
                     } else {
                       outcome.emplace(header->cluster_id);
                     }
                   });
  io.run();
  connection->close();
  if (!outcome) return make_error(ErrorCode::kUnavailable, "etcd member " + endpoint.to_string());
  return std::move(*outcome);
}

}  // namespace

class EtcdTokenSource::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(const asio::any_io_executor& executor, EtcdTokenOptions options, std::string cluster_id)
      : strand_(asio::make_strand(executor)),
        options_(std::move(options)),
        cluster_id_(std::move(cluster_id)),
        identity_("etcd:" + cluster_id_) {}

  const std::string& identity() const noexcept { return identity_; }

  void next(std::string name, Callback done) {
    asio::post(strand_, [self = shared_from_this(), name = std::move(name),
                         done = std::move(done)]() mutable {
      self->enqueue(std::move(name), std::move(done), /*draw=*/true);
    });
  }

  void current(std::string name, Callback done) {
    asio::post(strand_, [self = shared_from_this(), name = std::move(name),
                         done = std::move(done)]() mutable {
      self->enqueue(std::move(name), std::move(done), /*draw=*/false);
    });
  }

  void stop() {
    asio::post(strand_, [self = shared_from_this()] {
      self->stopped_ = true;
      if (self->connection_) self->connection_->close();
      self->fail_all(self->queue_, "the token source is stopping");
    });
  }

 private:
  struct Waiting {
    std::string name;
    Callback done;
    Clock::time_point deadline;
    bool draw;
  };

  void enqueue(std::string name, Callback done, bool draw) {
    if (!is_valid_lock_name(name)) {
      done(make_error(ErrorCode::kInvalidArgument, std::string(kLockNameRule)));
      return;
    }
    if (stopped_) {
      done(make_error(ErrorCode::kUnavailable, "the token source is stopping"));
      return;
    }
    if (queue_.size() >= options_.max_queued) {
      done(
          make_error(ErrorCode::kUnavailable, "too many fencing-token draws are waiting for etcd"));
      return;
    }
    queue_.push_back({std::move(name), std::move(done), Clock::now() + options_.timeout, draw});
    pump();
  }

  // Sends the next request if none is out: reads one at a time, draws in batches of distinct
  // names (a repeated name waits for the next batch).
  void pump() {
    if (busy_ || stopped_) return;
    const auto now = Clock::now();
    std::vector<Waiting> batch;
    batch.reserve(kMaxBatch);  // `names` views into its elements: they must not move
    std::deque<Waiting> later;
    std::unordered_set<std::string_view> names;
    bool reading = false;
    while (!queue_.empty()) {
      Waiting w = std::move(queue_.front());
      queue_.pop_front();
      if (now > w.deadline) {
        w.done(make_error(ErrorCode::kUnavailable, "etcd did not answer within " +
                                                       std::to_string(options_.timeout.count()) +
                                                       " ms (" + last_failure_ + ")"));
        continue;
      }
      const bool fits =
          batch.empty() || (!reading && w.draw && batch.size() < kMaxBatch && !names.count(w.name));
      if (!fits) {
        later.push_back(std::move(w));
        continue;
      }
      reading = !w.draw;
      batch.push_back(std::move(w));
      names.insert(batch.back().name);
      if (reading) break;
    }
    while (!queue_.empty()) {
      later.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    queue_ = std::move(later);
    if (batch.empty()) return;
    send(std::move(batch));
  }

  void send(std::vector<Waiting> batch) {
    busy_ = true;
    if (!connection_) {
      connection_ = std::make_shared<etcd::Connection>(strand_, options_.endpoints[endpoint_]);
    }
    std::string body;
    std::string_view target;
    if (batch.front().draw) {
      std::vector<std::string> keys;
      keys.reserve(batch.size());
      for (const Waiting& w : batch) keys.push_back(options_.key_prefix + w.name);
      body = etcd::txn_put_body(keys);
      target = kTxnTarget;
    } else {
      body = etcd::range_body(options_.key_prefix + batch.front().name);
      target = kRangeTarget;
    }
    connection_->post(target, std::move(body), options_.timeout,
                      [self = shared_from_this(),
                       batch = std::move(batch)](const Result<etcd::Answer>& answer) mutable {
                        self->on_answer(std::move(batch), answer);
                      });
  }

  void on_answer(std::vector<Waiting> batch, const Result<etcd::Answer>& answer) {
    busy_ = false;
    const Result<std::uint64_t> token = read_token(batch.front().draw, answer);
    if (!token.ok()) {
      last_failure_ = token.error().message;
      // Another member may do better: the next request goes there.
      if (connection_) connection_->close();
      connection_.reset();
      endpoint_ = (endpoint_ + 1) % options_.endpoints.size();
    }
    for (Waiting& w : batch) w.done(token);
    pump();
  }

  Result<std::uint64_t> read_token(bool draw, const Result<etcd::Answer>& answer) const {
    if (!answer.ok()) return answer.error();
    auto header = etcd::read_header(answer->status, answer->body);
    if (!header.ok()) return header.error();
    if (header->cluster_id != cluster_id_) {
      return make_error(ErrorCode::kUnavailable,
                        "etcd member " + connection_->endpoint().to_string() +
                            " belongs to another cluster (" + header->cluster_id +
                            ", this fencelockd uses " + cluster_id_ +
                            "): its revisions could be smaller than tokens already handed out");
    }
    if (!draw) return etcd::read_mod_revision(answer->body);
    if (header->revision == 0) {
      return make_error(ErrorCode::kInternal, "etcd answered a write without a revision");
    }
    return header->revision;
  }

  void fail_all(std::deque<Waiting>& waiting, const std::string& why) {
    auto failing = std::move(waiting);
    waiting.clear();
    for (Waiting& w : failing) w.done(make_error(ErrorCode::kUnavailable, why));
  }

  asio::any_io_executor strand_;
  EtcdTokenOptions options_;
  std::string cluster_id_;
  std::string identity_;
  std::shared_ptr<etcd::Connection> connection_;
  std::size_t endpoint_ = 0;
  std::deque<Waiting> queue_;
  bool busy_ = false;
  bool stopped_ = false;
  std::string last_failure_ = "no request yet";
};

Result<std::shared_ptr<EtcdTokenSource>> EtcdTokenSource::create(
    const asio::any_io_executor& executor, EtcdTokenOptions options) {
  if (auto problem = options_problem(options)) {
    return make_error(ErrorCode::kInvalidArgument, *problem);
  }
  std::string failures;
  for (const NodeAddress& endpoint : options.endpoints) {
    auto id = cluster_id_of(endpoint, options.timeout);
    if (id.ok()) {
      auto impl = std::make_shared<Impl>(executor, std::move(options), std::move(id).value());
      return std::shared_ptr<EtcdTokenSource>(new EtcdTokenSource(std::move(impl)));
    }
    failures += (failures.empty() ? "" : "; ") + id.error().message;
  }
  return make_error(ErrorCode::kUnavailable, "no etcd endpoint answered: " + failures);
}

EtcdTokenSource::~EtcdTokenSource() {
  stop();
}

const std::string& EtcdTokenSource::identity() const noexcept {
  return impl_->identity();
}

void EtcdTokenSource::stop() {
  impl_->stop();
}

void EtcdTokenSource::next(std::string_view name, Callback done) {
  impl_->next(std::string(name), std::move(done));
}

void EtcdTokenSource::current(std::string_view name, Callback done) {
  impl_->current(std::string(name), std::move(done));
}

}  // namespace fencelock::storage
