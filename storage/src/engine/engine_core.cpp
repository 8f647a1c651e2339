#include "engine/engine_core.h"

#include <algorithm>
#include <boost/asio/steady_timer.hpp>

#include "engine/node_scripts.h"

namespace fencelock::storage {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kHex64 = 16;  // hex digits of a 64-bit number
constexpr std::size_t kReleaseTagLength = 2 * kHex64;

void append_hex64(std::string& out, std::uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (int shift = 60; shift >= 0; shift -= 4) out.push_back(kDigits[(value >> shift) & 0xf]);
}

std::string hex64(std::uint64_t value) {
  std::string text;
  text.reserve(kHex64);
  append_hex64(text, value);
  return text;
}

}  // namespace

EngineCore::EngineCore(asio::any_io_executor strand, EngineOptions options,
                       std::shared_ptr<TokenSource> tokens, EngineObserver* observer)
    : strand_(std::move(strand)),
      options_(std::move(options)),
      tokens_(std::move(tokens)),
      observer_(observer),
      trust_(options_.nodes.size(),
             NodeTrust::Settings{
                 options_.max_ttl, options_.drift_factor, options_.quarantine_restarted_nodes,
                 tokens_ != nullptr && tokens_->has_history() && !options_.new_lock_nodes}),
      quarantined_flags_(new std::atomic<bool>[options_.nodes.size()]),
      unjudged_flags_(new std::atomic<bool>[options_.nodes.size()]),
      quarantine_ends_(new std::atomic<std::int64_t>[options_.nodes.size()]),
      repairing_(options_.nodes.size(), false),
      partial_repair_(options_.nodes.size(), false),
      repair_generation_(options_.nodes.size(), 0),
      first_repair_(options_.nodes.size()),
      refusals_(options_.nodes.size()),
      evictions_seen_(options_.nodes.size()),
      rng_(std::random_device{}()),
      // Never all zeros (that tag means "no engine") nor all f's (kCleanupTagEngine).
      engine_id_(hex64((rng_() | 1) & ~(std::uint64_t{1} << 63))),
      grace_timer_(strand_) {
  registry_ = std::make_shared<InstanceRegistry>(*this, options_.exclusive_tokens,
                                                 options_.shared_tokens, options_.token_order);
  RedisNodeOptions base;
  base.command_timeout = options_.node_timeout;
  base.connect_timeout = options_.connect_timeout;
  base.reconnect_min = options_.reconnect_min;
  base.reconnect_max = options_.reconnect_max;
  base.min_version = {6, 0};  // the scripts use SET ... KEEPTTL
  base.read_settings = true;
  base.recheck_interval = InstanceRegistry::kInterval;
  base.credentials = options_.credentials;
  RespCommand probe(9);
  probe.arg("EVAL")
      .arg(kNodeMarkerScript)
      .arg(std::int64_t{2})
      .arg(kNodeMarkerKey)
      .arg(registry_->key())
      .arg(options_.max_ttl.count())
      .arg(engine_id_)
      .arg(options_.key_prefix)
      .arg(options_.adopt_legacy_markers ? "1" : "0");
  base.probe = std::move(probe);
  for (std::size_t i = 0; i < kScriptCount; ++i) {  // every script, loaded on every connection
    const auto script = static_cast<Script>(i);
    base.scripts.push_back({std::string(script_source(script)), std::string(script_sha(script))});
  }
  for (std::size_t i = 0; i < options_.nodes.size(); ++i) {
    quarantined_flags_[i] = false;
    unjudged_flags_[i] = false;
    quarantine_ends_[i] = 0;
    quarantine_timers_.push_back(std::make_unique<asio::steady_timer>(strand_));
    RedisNodeOptions node_options = base;
    node_options.address = options_.nodes[i];
    node_options.resolve_timeout = options_.resolve_timeout;
    nodes_.push_back(std::make_shared<RedisNode>(strand_, i, std::move(node_options), this));
  }
}

void EngineCore::start() {
  if (stopped_ || !subscribers_.empty()) return;  // stopped, or started already
  for (auto& node : nodes_) node->start();
  registry_->start();
  // Subscribers are made here, not in the constructor: their handler holds a weak reference.
  for (const auto& node : options_.nodes) {
    ReleaseSubscriberOptions sub;
    sub.address = node;
    sub.resolve_timeout = options_.resolve_timeout;
    sub.channel = std::string(kAnnouncementChannel);
    sub.credentials = options_.credentials;
    sub.subscribe_timeout = options_.connect_timeout + options_.node_timeout;
    sub.reconnect_min = options_.reconnect_min;
    sub.reconnect_max = options_.reconnect_max;
    auto subscriber = std::make_shared<ReleaseSubscriber>(
        strand_, std::move(sub), [weak = weak_from_this()](std::string_view message) {
          if (const auto self = weak.lock()) self->on_announcement(message);
        });
    subscriber->start();
    subscribers_.push_back(std::move(subscriber));
  }
}

void EngineCore::stop() {
  if (stopped_) return;
  stopped_ = true;
  voting_nodes_ = 0;
  registry_->stop();
  for (auto& subscriber : subscribers_) subscriber->stop();
  for (auto& timer : quarantine_timers_) timer->cancel();
  watches_.stop();
  list_pacer_.stop();  // queued listing steps run now, and end: the engine is stopping
  // Acquires waiting between retries finish now (their last attempt was already released).
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& [raw, weak] : waiting) {
    if (auto operation = weak.lock()) operation->cancel();
  }
  if (in_flight_ == 0) {
    close_nodes();
    return;
  }
  grace_timer_.expires_after(2 * options_.node_timeout);
  grace_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec != asio::error::operation_aborted) self->close_nodes();
  });
}

void EngineCore::operation_finished() {
  --in_flight_;
  if (stopped_ && in_flight_ == 0) close_nodes();
}

void EngineCore::close_nodes() {
  if (nodes_closed_) return;
  nodes_closed_ = true;
  grace_timer_.cancel();
  for (auto& node : nodes_) node->stop();
}

std::string EngineCore::key_of(std::string_view name) const {
  std::string key;
  key.reserve(options_.key_prefix.size() + name.size());
  key.append(options_.key_prefix).append(name);
  return key;
}

std::optional<std::string> EngineCore::grant_refusal() const {
  return explained(registry_->refusal(Clock::now()));
}

std::optional<std::string> EngineCore::grant_refusal(std::chrono::milliseconds ttl) const {
  return explained(registry_->refusal(Clock::now(), ttl));
}

std::optional<std::string> EngineCore::explained(std::optional<std::string> refusal) const {
  if (!refusal || *refusal != InstanceRegistry::kNotYetChecked) return refusal;
  std::lock_guard<std::mutex> lock(refusals_mutex_);
  if (!awaiting_birth_.empty()) *refusal += ": " + awaiting_birth_;
  return refusal;
}

std::optional<std::string> EngineCore::ttl_refusal(std::chrono::milliseconds ttl) const {
  return registry_->ttl_refusal(ttl);
}

std::chrono::milliseconds EngineCore::longest_known_ttl() const {
  return trust_.longest_ttl();
}

std::uint64_t EngineCore::token_floor() const {
  return registry_->token_floor();
}

std::optional<std::string> EngineCore::token_refusal(std::uint64_t token,
                                                     std::uint64_t floor) const {
  return registry_->token_refusal(Clock::now(), token, floor);
}

std::optional<std::string> EngineCore::current_refusal(std::uint64_t current,
                                                       std::uint64_t floor) const {
  return registry_->current_refusal(Clock::now(), current, floor);
}

bool EngineCore::node_votes(std::size_t node) const {
  return votes(node, Clock::now());
}

bool EngineCore::votes(std::size_t node, Clock::time_point now) const {
  return trust_.voting(node, now) && !trust_.fences_missing(node);
}

QuorumTally EngineCore::new_tally() {
  QuorumTally tally(nodes_.size(), quorum());
  const auto now = Clock::now();
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!votes(i, now)) tally.exclude(i);
  }
  return tally;
}

void EngineCore::fail_unconnected(QuorumTally& tally) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (tally.is_voter(i) && !nodes_[i]->ready()) tally.record(i, Vote::kFailed);
  }
}

void EngineCore::broadcast(const RespCommand& command, const std::shared_ptr<ReplySink>& sink,
                           std::uint32_t cookie) {
  for (auto& node : nodes_) node->send(command, sink, cookie);
}

void EngineCore::send_to(std::size_t node, const RespCommand& command,
                         const std::shared_ptr<ReplySink>& sink, std::uint32_t cookie) {
  nodes_.at(node)->send(command, sink, cookie);
}

void EngineCore::confirm_votes(const std::shared_ptr<ReplySink>& sink, std::uint32_t cookie) {
  for (auto& node : nodes_) node->confirm_after(sink, cookie);
}

void EngineCore::confirm_vote(std::size_t node, const std::shared_ptr<ReplySink>& sink,
                              std::uint32_t cookie) {
  nodes_.at(node)->confirm_after(sink, cookie);
}

RespCommand EngineCore::script_command(Script script, bool eval, std::span<const std::string> keys,
                                       std::span<const std::string> args) {
  RespCommand command(3 + keys.size() + args.size());
  if (eval) {
    command.arg("EVAL").arg(script_source(script));
  } else {
    command.arg("EVALSHA").arg(script_sha(script));
  }
  command.arg(static_cast<std::int64_t>(keys.size()));
  for (const auto& key : keys) command.arg(key);
  for (const auto& arg : args) command.arg(arg);
  return command;
}

bool EngineCore::resend_on_noscript(std::size_t node, const NodeReply& reply,
                                    const std::function<RespCommand()>& eval,
                                    const std::shared_ptr<ReplySink>& sink, std::uint32_t cookie) {
  if (!reply.is_error_prefix("NOSCRIPT")) return false;
  send_to(node, eval(), sink, cookie);
  return true;
}

void EngineCore::report(OperationKind kind, std::optional<ErrorCode> error, Clock::duration elapsed,
                        std::uint32_t attempts, const QuorumTally* tally,
                        Clock::duration token_draw) {
  if (observer_ == nullptr) return;
  OperationReport report{kind, error, elapsed, attempts, {}, token_draw};
  if (tally != nullptr) {
    for (std::size_t i = 0; i < tally->node_count(); ++i) report.votes.push_back(tally->vote_of(i));
  }
  observer_->on_operation(report);
}

void EngineCore::release_everywhere(std::span<const std::string> keys, std::string_view value,
                                    Script cleanup) {
  // EVAL, not EVALSHA: nobody listens for a NOSCRIPT answer to retry (the script is small).
  const std::string args[] = {std::string(value)};
  broadcast(script_command(cleanup, true, keys, args), nullptr, 0);
  // This engine's watches look again after it (their inspection follows it on each connection).
  for (const std::string& key : keys) {
    if (key.starts_with(options_.key_prefix) && key.size() > options_.key_prefix.size())
      watches_.changed(key.substr(options_.key_prefix.size()));
  }
}

std::string EngineCore::new_release_tag() {
  std::string tag;
  tag.reserve(kReleaseTagLength);
  tag.append(engine_id_);
  append_hex64(tag, ++releases_);
  return tag;
}

void EngineCore::on_announcement(std::string_view message) {
  // "<release tag> <key>"; anything else on the channel is not ours to act on (another key
  // prefix: another deployment sharing these nodes).
  if (stopped_ || message.size() <= kReleaseTagLength + 1 || message[kReleaseTagLength] != ' ')
    return;
  const std::string_view tag = message.substr(0, kReleaseTagLength);
  if (tag.substr(0, kHex64) == engine_id_) return;  // ours: our waiters were woken directly
  const std::string_view key = message.substr(kReleaseTagLength + 1);
  if (!key.starts_with(options_.key_prefix)) return;
  const std::string name(key.substr(options_.key_prefix.size()));
  watches_.changed(name);
  if (tag.starts_with(kCleanupTagEngine)) return;  // a failed attempt's cleanup: for watches only
  waiters_.release_heard(name, tag);
}

void EngineCore::track(Cancellable* operation, std::weak_ptr<Cancellable> handle) {
  waiting_.emplace(operation, std::move(handle));
}

void EngineCore::untrack(Cancellable* operation) {
  waiting_.erase(operation);
}

}  // namespace fencelock::storage
