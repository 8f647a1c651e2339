#include "fencelock/storage/etcd_token_source.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <charconv>
#include <deque>
#include <optional>
#include <unordered_set>

#include "fencelock/names.h"
#include "fencelock/random_hex.h"
#include "tokens/etcd_connection.h"
#include "tokens/etcd_wire.h"

namespace fencelock::storage {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::string_view kTxnTarget = "/v3/kv/txn";
// A history's base may be at most this, so that base + revision stays a positive int64 for
// 2^62 revisions.
constexpr std::uint64_t kMaxFloor = std::uint64_t{1} << 62;

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
  if (o.floor > kMaxFloor) return "etcd floor: must be 0 .. 2^62";
  return std::nullopt;
}

// What the history key holds: "<history id> <base>".
struct History {
  std::string id;  // 32 hex digits
  std::uint64_t base = 0;
  std::string value() const { return id + " " + std::to_string(base); }
};

std::optional<History> parse_history(std::string_view value) {
  const auto space = value.find(' ');
  const auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  if (space != 32 || !std::all_of(value.begin(), value.begin() + 32, hex)) return std::nullopt;
  History out{std::string(value.substr(0, space)), 0};
  const std::string_view base = value.substr(space + 1);
  const auto [end, error] = std::from_chars(base.data(), base.data() + base.size(), out.base);
  if (error != std::errc() || end != base.data() + base.size() || out.base > kMaxFloor) {
    return std::nullopt;
  }
  return out;
}

// What the source learns at start, from one member.
struct Start {
  etcd::Header header;
  History history;
  bool created = false;  // the history is the one this source wrote
  bool drawn = false;    // a token was drawn under it before (its clock key was written)
};

// The answer to create_or_read_body(): the history created now (`fresh`) or the one found.
Result<Start> read_start(const Result<etcd::Answer>& answer, const std::string& key,
                         const History& fresh) {
  if (!answer.ok()) return answer.error();
  auto header = etcd::read_header(answer->status, answer->body);
  if (!header.ok()) return header.error();
  if (header->succeeded) return Start{*header, fresh};  // created now
  auto read = etcd::read_first_range(answer->body);
  if (!read.ok()) return read.error();
  auto history = parse_history(read->value);
  if (!history) {
    return make_error(ErrorCode::kInternal, "the etcd key " + key +
                                                " is not a fencelock token history: use another "
                                                "prefix");
  }
  auto clock = etcd::read_range(answer->body, 1);
  if (!clock.ok()) return clock.error();
  return Start{*header, *history, false, clock->mod_revision != 0};
}

// One blocking round trip (startup only): creates the prefix's history if it has none, else
// reads it. The transaction is linearizable, so its revision bounds every token handed out so
// far by this history.
Result<Start> start_with(const NodeAddress& endpoint, const EtcdTokenOptions& options,
                         const History& fresh) {
  asio::io_context io(1);
  auto connection = std::make_shared<etcd::Connection>(io.get_executor(), endpoint);
  const std::string key = history_key(options.key_prefix);
  std::optional<Result<Start>> outcome;
  connection->post(
      kTxnTarget, etcd::create_or_read_body(key, fresh.value(), clock_key(options.key_prefix)),
      options.timeout,
      [&](const Result<etcd::Answer>& answer) { outcome.emplace(read_start(answer, key, fresh)); });
  io.run();
  connection->close();
  if (!outcome) return make_error(ErrorCode::kUnavailable, "etcd member " + endpoint.to_string());
  return std::move(*outcome);
}

}  // namespace

std::string history_key(std::string_view key_prefix) {
  return std::string(key_prefix) + "#history";
}

std::string clock_key(std::string_view key_prefix) {
  return std::string(key_prefix) + "#clock";
}

class EtcdTokenSource::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(const asio::any_io_executor& executor, EtcdTokenOptions options, const Start& start)
      : strand_(asio::make_strand(executor)),
        options_(std::move(options)),
        cluster_id_(start.header.cluster_id),
        identity_("etcd:" + cluster_id_ + ":" + start.history.id),
        guard_{history_key(options_.key_prefix), start.history.value()},
        draw_body_(etcd::guarded_put_body(guard_, clock_key(options_.key_prefix))),
        read_body_(etcd::guarded_read_body(guard_, clock_key(options_.key_prefix))),
        base_(start.history.base),
        highest_revision_(start.header.revision),
        had_history_(!start.created && start.drawn) {}

  const std::string& identity() const noexcept { return identity_; }
  bool has_history() const noexcept { return had_history_; }
  bool broken() const noexcept { return broken_flag_.load(); }

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
    if (broken_) {
      done(make_error(ErrorCode::kUnavailable, *broken_));
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

  // Sends the next request if none is out: draws of distinct names share one transaction (a
  // repeated name waits for the next one: one revision per transaction), reads share another.
  void pump() {
    if (busy_ || stopped_) return;
    const auto now = Clock::now();
    std::vector<Waiting> batch;
    batch.reserve(std::min(queue_.size(), kMaxBatch));  // `names` views into its elements
    std::deque<Waiting> later;
    std::unordered_set<std::string_view> names;
    while (!queue_.empty() && batch.size() < kMaxBatch) {
      Waiting w = std::move(queue_.front());
      queue_.pop_front();
      if (now > w.deadline) {
        w.done(make_error(ErrorCode::kUnavailable, "etcd did not answer within " +
                                                       std::to_string(options_.timeout.count()) +
                                                       " ms (" + last_failure_ + ")"));
        continue;
      }
      const bool fits =
          batch.empty() || (w.draw == batch.front().draw && (!w.draw || !names.count(w.name)));
      if (!fits) {
        later.push_back(std::move(w));
        continue;
      }
      batch.push_back(std::move(w));
      if (batch.back().draw) names.insert(batch.back().name);
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
    const std::string& body = batch.front().draw ? draw_body_ : read_body_;
    connection_->post(kTxnTarget, body, options_.timeout,
                      [self = shared_from_this(),
                       batch = std::move(batch)](const Result<etcd::Answer>& answer) mutable {
                        self->on_answer(std::move(batch), answer);
                      });
  }

  void on_answer(std::vector<Waiting> batch, const Result<etcd::Answer>& answer) {
    busy_ = false;
    Result<std::uint64_t> token = read_token(batch.front().draw, answer);
    if (broken_) token = make_error(ErrorCode::kUnavailable, *broken_);
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

  // The token an answer carries. An answer from another cluster fails its request, as does a read
  // below a revision seen before; one showing that etcd went back (a write's revision not above
  // every one seen, or the history key gone) breaks the source for good: the cluster was wiped,
  // re-bootstrapped or restored, and its revisions may repeat tokens already handed out.
  Result<std::uint64_t> read_token(bool draw, const Result<etcd::Answer>& answer) {
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
    if (!header->succeeded) {
      broken_ = "etcd no longer holds this token history (the key " + guard_.key +
                "): the cluster was wiped, bootstrapped again or replaced, and its revisions "
                "could repeat tokens already handed out; this fencelockd hands out none "
                "(docs/operations.md, \"Token source\")";
      broken_flag_ = true;
      return make_error(ErrorCode::kUnavailable, *broken_);
    }
    if (!draw && header->revision < highest_revision_) {
      // A member behind the others (it should not answer a linearizable read, but only a write
      // proves that etcd went back): this read fails, the next request goes to another member.
      return make_error(ErrorCode::kUnavailable,
                        "etcd member " + connection_->endpoint().to_string() +
                            " answered revision " + std::to_string(header->revision) + ", below " +
                            std::to_string(highest_revision_) + " seen before");
    }
    if (draw && header->revision <= highest_revision_) {
      broken_ = "etcd's revision went back from " + std::to_string(highest_revision_) + " to " +
                std::to_string(header->revision) +
                " (a cluster restored from a backup or recovered with --force-new-cluster): its "
                "tokens could repeat ones already handed out; this fencelockd hands out none "
                "(docs/operations.md, \"Token source\")";
      broken_flag_ = true;
      return make_error(ErrorCode::kUnavailable, *broken_);
    }
    highest_revision_ = header->revision;
    if (header->revision == 0) {
      return make_error(ErrorCode::kInternal, "etcd answered without a revision");
    }
    // A write's revision is new; a read's bounds every revision written before it.
    return base_ + header->revision;
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
  etcd::HistoryGuard guard_;
  std::string draw_body_;  // every draw's transaction: a put of clock_key()
  std::string read_body_;  // every read's
  std::uint64_t base_;
  std::uint64_t highest_revision_;        // of every answer so far: it never goes back
  const bool had_history_;                // a token was drawn under the history before
  std::optional<std::string> broken_;     // why this source hands out nothing any more
  std::atomic<bool> broken_flag_{false};  // broken_ is set, for other threads
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
  auto id = random_hex(16);  // 128 bits
  if (!id.ok()) return make_error(ErrorCode::kInternal, std::move(id).error().message);
  const History fresh{std::move(id).value(), options.floor};
  std::string failures;
  for (const NodeAddress& endpoint : options.endpoints) {
    auto start = start_with(endpoint, options, fresh);
    if (!start.ok()) {
      if (start.error().code != ErrorCode::kUnavailable) return start.error();
      failures += (failures.empty() ? "" : "; ") + start.error().message;
      continue;
    }
    // Every token from now on is above base + this revision.
    const std::uint64_t above = start->history.base + start->header.revision;
    if (above < options.floor) {
      return make_error(
          ErrorCode::kInvalidArgument,
          "etcd floor: the token history under the prefix " + options.key_prefix +
              " hands out tokens above " + std::to_string(above) + " only, not above the floor " +
              std::to_string(options.floor) +
              " (a floor counts only when a prefix is first used: take a new prefix)");
    }
    start->created = start->history.id == fresh.id;  // ours, even if a lost answer made us read it
    auto impl = std::make_shared<Impl>(executor, std::move(options), *start);
    return std::shared_ptr<EtcdTokenSource>(new EtcdTokenSource(std::move(impl)));
  }
  return make_error(ErrorCode::kUnavailable, "no etcd endpoint answered: " + failures);
}

EtcdTokenSource::~EtcdTokenSource() {
  stop();
}

const std::string& EtcdTokenSource::identity() const noexcept {
  return impl_->identity();
}

bool EtcdTokenSource::has_history() const {
  return impl_->has_history();
}

TokenTraits EtcdTokenSource::traits() const {
  return {TokenTraits::Order::kGlobal, "etcd", "", identity()};
}

bool EtcdTokenSource::broken() const noexcept {
  return impl_->broken();
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
