#include "engine_core.h"

#include <boost/asio/steady_timer.hpp>

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
      quarantine_(options_.nodes.size(), quarantine_window(options_), options_.quarantine_restarted_nodes),
      quarantined_flags_(new std::atomic<bool>[options_.nodes.size()]),
      rng_(std::random_device{}()),
      engine_id_(hex64(rng_() | 1)),  // never all zeros: that tag means "no engine"
      grace_timer_(strand_) {
  RedisNodeOptions base;
  base.command_timeout = options_.node_timeout;
  base.connect_timeout = options_.connect_timeout;
  base.reconnect_min = options_.reconnect_min;
  base.reconnect_max = options_.reconnect_max;
  for (std::size_t i = 0; i < kScriptCount; ++i) {  // every script, loaded on every connection
    const auto script = static_cast<Script>(i);
    base.scripts.push_back({std::string(script_source(script)), std::string(script_sha(script))});
  }
  for (std::size_t i = 0; i < options_.nodes.size(); ++i) {
    quarantined_flags_[i] = false;
    quarantine_timers_.push_back(std::make_unique<asio::steady_timer>(strand_));
    RedisNodeOptions node_options = base;
    node_options.host = options_.nodes[i].host;
    node_options.port = options_.nodes[i].port;
    nodes_.push_back(std::make_shared<RedisNode>(strand_, i, std::move(node_options), this));
  }
}

void EngineCore::start() {
  if (stopped_ || !subscribers_.empty()) return;  // stopped, or started already
  for (auto& node : nodes_) node->start();
  // Subscribers are made here, not in the constructor: their handler holds a weak reference.
  for (const auto& node : options_.nodes) {
    ReleaseSubscriberOptions sub;
    sub.host = node.host;
    sub.port = node.port;
    sub.channel = std::string(kAnnouncementChannel);
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
  for (auto& subscriber : subscribers_) subscriber->stop();
  for (auto& timer : quarantine_timers_) timer->cancel();
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

QuorumTally EngineCore::new_tally() {
  QuorumTally tally(nodes_.size(), quorum());
  const auto now = Clock::now();
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (quarantine_.quarantined(i, now)) tally.exclude(i);
  }
  return tally;
}

void EngineCore::broadcast(const RespCommand& command, const std::shared_ptr<ReplySink>& sink,
                           std::uint32_t cookie) {
  for (auto& node : nodes_) node->send(command, sink, cookie);
}

void EngineCore::send_to(std::size_t node, const RespCommand& command,
                         const std::shared_ptr<ReplySink>& sink, std::uint32_t cookie) {
  nodes_.at(node)->send(command, sink, cookie);
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

void EngineCore::release_everywhere(std::string_view name, std::string_view value) {
  // EVAL, not EVALSHA: nobody listens for a NOSCRIPT answer to retry (the script is tiny).
  const std::string keys[] = {key_of(name)};
  const std::string args[] = {std::string(value)};
  broadcast(script_command(Script::kReleaseSilently, true, keys, args), nullptr, 0);
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
  if (stopped_ || message.size() <= kReleaseTagLength + 1 || message[kReleaseTagLength] != ' ') return;
  const std::string_view tag = message.substr(0, kReleaseTagLength);
  if (tag.substr(0, kHex64) == engine_id_) return;  // ours: our waiters were woken directly
  const std::string_view key = message.substr(kReleaseTagLength + 1);
  if (!key.starts_with(options_.key_prefix)) return;
  const std::string name(key.substr(options_.key_prefix.size()));
  const auto it = waiters_.find(name);
  if (it == waiters_.end()) return;
  if (it->second.last_release != tag) {
    wake_first_waiter(name, tag);
  } else if (const auto woken = it->second.woken.lock()) {
    // Another node's copy: that node has now deleted the key too. If the woken waiter's attempt
    // is still out, it may have been refused there; this makes it try once more at once.
    woken->wake_now();
  }
}

void EngineCore::track(Cancellable* operation, std::weak_ptr<Cancellable> handle) {
  waiting_.emplace(operation, std::move(handle));
}

void EngineCore::untrack(Cancellable* operation) { waiting_.erase(operation); }

bool EngineCore::has_waiters(const std::string& name) const {
  const auto it = waiters_.find(name);
  return it != waiters_.end() && !it->second.queue.empty();
}

void EngineCore::add_waiter(const std::string& name, std::weak_ptr<Waiter> waiter) {
  waiters_[name].queue.push_back(std::move(waiter));
}

void EngineCore::remove_waiter(const std::string& name, const Waiter* waiter) {
  const auto it = waiters_.find(name);
  if (it == waiters_.end()) return;
  it->second.queue.remove_if([waiter](const std::weak_ptr<Waiter>& w) {
    const auto locked = w.lock();
    return !locked || locked.get() == waiter;
  });
  if (it->second.queue.empty()) waiters_.erase(it);
}

void EngineCore::wake_first_waiter(const std::string& name, std::string_view release_tag) {
  const auto it = waiters_.find(name);
  if (it == waiters_.end()) return;
  it->second.last_release.assign(release_tag);
  it->second.woken.reset();
  for (const auto& weak : it->second.queue) {
    if (const auto waiter = weak.lock(); waiter && waiter->wake_now()) {
      it->second.woken = waiter;
      return;
    }
  }
}

void EngineCore::on_node_ready(std::size_t node, const NodeIdentity& identity) {
  const bool restarted = quarantine_.observe(node, identity.run_id, Clock::now());
  if (observer_ != nullptr) observer_->on_node_up(node, nodes_[node]->address(), identity.run_id);
  if (restarted) {
    quarantined_flags_[node] = true;
    if (observer_ != nullptr) {
      observer_->on_node_quarantined(
          node, nodes_[node]->address(),
          std::chrono::ceil<std::chrono::milliseconds>(quarantine_window(options_)));
    }
    schedule_quarantine_end(node);
  }
  refresh_voting_count();
}

void EngineCore::on_node_down(std::size_t node, const std::string& why) {
  if (observer_ != nullptr) observer_->on_node_down(node, nodes_[node]->address(), why);
  refresh_voting_count();
}

void EngineCore::schedule_quarantine_end(std::size_t node) {
  // Only refreshes the flag that metrics and readiness read; votes consult the tracker directly.
  asio::steady_timer& timer = *quarantine_timers_[node];
  timer.expires_at(quarantine_.quarantined_until(node));  // cancels an earlier wait
  timer.async_wait([self = shared_from_this(), node](const boost::system::error_code& ec) {
    if (ec == asio::error::operation_aborted) return;
    if (!self->quarantine_.quarantined(node, Clock::now())) self->quarantined_flags_[node] = false;
    self->refresh_voting_count();
  });
}

void EngineCore::refresh_voting_count() {
  std::size_t voting = 0;
  const auto now = Clock::now();
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i]->ready() && !quarantine_.quarantined(i, now)) ++voting;
  }
  voting_nodes_ = voting;
}

}  // namespace fencelock::storage
