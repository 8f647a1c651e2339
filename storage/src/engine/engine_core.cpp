#include "engine/engine_core.h"

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <charconv>

#include "engine/fence_repair.h"

namespace fencelock::storage {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kHex64 = 16;  // hex digits of a 64-bit number
constexpr std::size_t kReleaseTagLength = 2 * kHex64;
// How long a fence repair that could not complete waits before it tries again.
constexpr std::chrono::seconds kFenceRepairRetry{1};
// How long strict fence repairs of one loss must have failed before a best-effort one may run
// (the node is needed for a quorum: fence_repair.h).
constexpr std::chrono::seconds kBestEffortPatience{2};

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
      engine_id_(hex64(rng_() | 1)),  // never all zeros: that tag means "no engine"
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

void EngineCore::release_everywhere(std::span<const std::string> keys, std::string_view value) {
  // EVAL, not EVALSHA: nobody listens for a NOSCRIPT answer to retry (the script is tiny).
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
  if (stopped_ || message.size() <= kReleaseTagLength + 1 || message[kReleaseTagLength] != ' ')
    return;
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
    woken->wake_now(name);
  }
}

void EngineCore::track(Cancellable* operation, std::weak_ptr<Cancellable> handle) {
  waiting_.emplace(operation, std::move(handle));
}

void EngineCore::untrack(Cancellable* operation) {
  waiting_.erase(operation);
}

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

bool EngineCore::is_first_waiter(const std::string& name, const Waiter* waiter) const {
  const auto it = waiters_.find(name);
  if (it == waiters_.end()) return false;
  for (const auto& weak : it->second.queue) {
    if (const auto first = weak.lock()) return first.get() == waiter;
  }
  return false;
}

void EngineCore::wake_first_waiter(const std::string& name, std::string_view release_tag) {
  const auto it = waiters_.find(name);
  if (it == waiters_.end()) return;
  it->second.last_release.assign(release_tag);
  it->second.woken.reset();
  wake_from(it->second, name, it->second.queue.begin());
}

void EngineCore::wake_waiter_after(const std::string& name, const Waiter* after) {
  const auto it = waiters_.find(name);
  if (it == waiters_.end()) return;
  auto next =
      std::find_if(it->second.queue.begin(), it->second.queue.end(),
                   [after](const std::weak_ptr<Waiter>& w) { return w.lock().get() == after; });
  // Gone from the queue already (finished): the wake-up goes to the first waiter instead.
  next = next == it->second.queue.end() ? it->second.queue.begin() : std::next(next);
  wake_from(it->second, name, next);
}

void EngineCore::promote_waiter_after(const std::string& name, const Waiter* after,
                                      Clock::duration frees_in) {
  const auto it = waiters_.find(name);
  if (it == waiters_.end()) return;
  bool behind = false;
  for (const auto& weak : it->second.queue) {
    const auto waiter = weak.lock();
    if (!waiter) continue;
    if (behind) {
      waiter->become_first(frees_in);
      return;
    }
    behind = waiter.get() == after;
  }
}

void EngineCore::wake_from(NameWaiters& waiters, const std::string& name,
                           std::list<std::weak_ptr<Waiter>>::iterator first) {
  for (auto at = first; at != waiters.queue.end(); ++at) {
    const auto waiter = at->lock();
    if (!waiter) continue;
    const Waiter::Wake wake = waiter->wake_now(name);
    if (wake == Waiter::Wake::kFinished) continue;
    if (wake == Waiter::Wake::kPassed) continue;
    // Taken; or already awake: its attempt out (or about to go) tries again should it fail.
    if (waiters.woken.expired()) waiters.woken = waiter;
    return;
  }
}

NodeTrust::Handshake EngineCore::handshake_of(std::size_t node, const NodeIdentity& identity,
                                              bool& evicted) {
  NodeTrust::Handshake handshake;
  handshake.run_id = identity.run_id;
  handshake.uptime = identity.uptime;
  handshake.durable = identity.durable;
  // The marker probe's answer: {admitted or "", max_ttl_ms, suspect or "", suspect age ms,
  // our last heartbeat number there or "", fences_missing or "", "1" if an older version's
  // admission is there}.
  const NodeReply& marker = identity.probe;
  const auto number = [](const std::string& text) {
    long long value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value);
    return value;
  };
  if (marker.kind == NodeReply::Kind::kArray && marker.elements.size() >= 2) {
    handshake.admitted = marker.elements[0].text;
    handshake.marked_max_ttl = std::chrono::milliseconds(number(marker.elements[1].text));
  }
  if (marker.kind == NodeReply::Kind::kArray && marker.elements.size() >= 7) {
    handshake.fences_missing = !marker.elements[5].text.empty();
    handshake.legacy_admitted = marker.elements[6].text == "1";
  }
  if (marker.kind == NodeReply::Kind::kArray && marker.elements.size() >= 5) {
    handshake.suspect = marker.elements[2].text;
    handshake.suspect_age = std::chrono::milliseconds(number(marker.elements[3].text));
    // Our registry entry there is older than the last one the node acknowledged: restored from a
    // backup (or it lost its data otherwise). What it holds now is the new starting point.
    const auto acked = registry_->acked(node);
    handshake.lost_writes =
        acked != 0 && static_cast<std::uint64_t>(number(marker.elements[4].text)) < acked;
    if (handshake.lost_writes) registry_->forget_acked(node);
  }
  const std::string evicted_record =
      marker.kind == NodeReply::Kind::kArray && marker.elements.size() >= 8
          ? marker.elements[7].text
          : std::string();
  evicted = evicted_unseen(node, identity, evicted_record);
  handshake.lost_writes = handshake.lost_writes || evicted;
  return handshake;
}

void EngineCore::on_node_ready(std::size_t node, const NodeIdentity& identity) {
  {
    std::lock_guard<std::mutex> lock(refusals_mutex_);
    refusals_[node].clear();
  }
  bool evicted = false;
  const NodeTrust::Handshake handshake = handshake_of(node, identity, evicted);
  const auto now = Clock::now();
  const auto admitted = trust_.observe(node, handshake, now);
  if (observer_ != nullptr) observer_->on_node_up(node, nodes_[node]->address(), identity.run_id);
  took_verdict(node, admitted, handshake, evicted, now);
}

void EngineCore::on_node_probed(std::size_t node, const NodeIdentity& identity) {
  bool evicted = false;
  const NodeTrust::Handshake handshake = handshake_of(node, identity, evicted);
  if (handshake.lost_writes) {  // evidence as the registry's heartbeat finds it
    node_lost_keys(node, evicted ? "it evicted keys that no engine recorded"
                                 : "it holds an older registry entry of this fencelockd than it "
                                   "acknowledged (restored from a backup?)");
    return;
  }
  const auto now = Clock::now();
  const bool unjudged = trust_.unjudged(node);
  const bool voted = votes(node, now);
  const auto until = trust_.quarantined_until(node);
  const auto admitted = trust_.reread(node, handshake, now);
  if (unjudged || !admitted.empty() || votes(node, now) != voted ||
      trust_.quarantined_until(node) != until)
    took_verdict(node, admitted, handshake, false, now);
}

bool EngineCore::wants_probe_again(std::size_t node) {
  return trust_.worth_rereading(node);
}

void EngineCore::took_verdict(std::size_t node, const std::vector<std::size_t>& admitted,
                              const NodeTrust::Handshake& handshake, bool evicted,
                              Clock::time_point now) {
  record_fence_losses(trust_.take_fence_losses());
  record_admissions(admitted);
  record_suspects(
      trust_.take_suspects(),
      evicted ? "it evicted keys (INFO stats: evicted_keys " +
                    std::to_string(evictions_seen_.at(node).evicted) + ") that no engine recorded"
      : handshake.lost_writes
          ? "it holds an older registry entry of this fencelockd than it acknowledged (restored "
            "from a backup, or restarted without its data)"
          : "it may have dropped keys since it was last seen (it was refused as unsafe, or it "
            "restarted after running without durable persistence)");
  tell_quarantine(node, now);
  refresh_quarantines();
}

void EngineCore::tell_quarantine(std::size_t node, Clock::time_point now) {
  // A node waiting for a new cluster's other nodes, or for an admission in flight, is not
  // quarantined for what it lost.
  const auto until = trust_.quarantined_until(node);  // max(): refused as unsafe, logged so
  if (until && *until != Clock::time_point::max() && observer_ != nullptr &&
      !trust_.awaiting_birth() && !trust_.unjudged(node)) {
    observer_->on_node_quarantined(node, nodes_[node]->address(),
                                   std::chrono::ceil<std::chrono::milliseconds>(*until - now));
  }
}

void EngineCore::end_waits() {
  const auto now = Clock::now();
  std::vector<std::size_t> waited;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (trust_.unjudged(i)) waited.push_back(i);
  }
  record_admissions(trust_.refresh(now));
  record_fence_losses(trust_.take_fence_losses());
  for (const std::size_t node : waited) {
    if (!trust_.unjudged(node)) tell_quarantine(node, now);
  }
  refresh_quarantines();
}

void EngineCore::node_lost_writes(std::size_t node, std::uint64_t holds, std::uint64_t acked) {
  node_lost_keys(node,
                 "it lost acknowledged writes without a restart: it holds registry heartbeat " +
                     std::to_string(holds) + " of this fencelockd after acknowledging " +
                     std::to_string(acked) + " (FLUSHALL, a replica resync, keys deleted?)");
}

void EngineCore::node_lost_keys(std::size_t node, const std::string& why) {
  trust_.lost_keys(node, trust_.run_id(node), Clock::now());
  record_fence_losses(trust_.take_fence_losses());
  record_suspects(trust_.take_suspects(), why);
  refresh_quarantines();
}

bool EngineCore::evicted_unseen(std::size_t node, const NodeIdentity& identity,
                                std::string_view recorded) {
  if (!identity.evicted_keys) return false;
  const std::uint64_t now_count = *identity.evicted_keys;
  EvictionsSeen& seen = evictions_seen_.at(node);
  if (seen.run_id != identity.run_id) {  // first read of this incarnation: the node's record
    const std::size_t space = recorded.find(' ');
    std::uint64_t recorded_count = 0;
    if (space != std::string_view::npos && recorded.substr(0, space) == identity.run_id) {
      const std::string_view digits = recorded.substr(space + 1);
      std::from_chars(digits.data(), digits.data() + digits.size(), recorded_count);
    }
    seen = EvictionsSeen{identity.run_id, recorded_count, 0};
  }
  // Fewer evictions, or fewer commands than a read before: CONFIG RESETSTAT, which may have hidden
  // evictions since that read.
  const bool reset = identity.commands_processed && *identity.commands_processed < seen.commands;
  const bool unseen = now_count != seen.evicted || reset;
  seen.evicted = now_count;
  if (identity.commands_processed) seen.commands = *identity.commands_processed;
  return unseen;
}

void EngineCore::forget_longest_ttl() {
  trust_.forget_longest_ttl();
  refresh_quarantines();
}

void EngineCore::note_max_ttl(std::chrono::milliseconds ttl, bool majority) {
  if (trust_.note_max_ttl(ttl, majority)) refresh_quarantines();
}

void EngineCore::on_node_rechecked(std::size_t node, const NodeIdentity& identity) {
  if (!identity.durable) trust_.not_durable(node, identity.run_id);
  note_evictions(node, identity, "between two checks");
}

bool EngineCore::on_evictions_read(std::size_t node, const NodeIdentity& identity) {
  note_evictions(node, identity, "before a vote");
  return votes(node, Clock::now());
}

void EngineCore::note_evictions(std::size_t node, const NodeIdentity& identity,
                                std::string_view when) {
  if (!evicted_unseen(node, identity, {})) return;
  node_lost_keys(node, "it evicted keys, or its statistics were reset (INFO stats: evicted_keys " +
                           std::to_string(identity.evicted_keys.value_or(0)) + "), " +
                           std::string(when) + ": its memory policy may have let it evict");
}

std::string EngineCore::node_refusal(std::size_t node) const {
  std::lock_guard<std::mutex> lock(refusals_mutex_);
  return refusals_.at(node);
}

std::optional<std::string> EngineCore::refusal_of(std::size_t node, const NodeIdentity& identity) {
  // A quorum counts servers, not configured addresses: "localhost:7000" and "127.0.0.1:7000", or
  // two DNS names of one pod, would otherwise give one server two votes — a majority of slots
  // without a majority of servers, i.e. a double grant. The first slot up keeps the server.
  for (std::size_t other = 0; other < nodes_.size(); ++other) {
    if (other == node || !nodes_[other]->ready() || trust_.run_id(other) != identity.run_id)
      continue;
    return "answers as the same Redis server (run_id " + identity.run_id + ") as " +
           nodes_[other]->address() +
           ": two addresses of one server, which votes once; list each server once";
  }
  // A node that drops keys on its own under memory pressure forgets leases it granted: it is not
  // a lock node. Once it is seen without the risk, it waits out a quarantine (it may have evicted
  // until then).
  if (auto risk = eviction_risk(identity)) {
    trust_.unsafe(node, identity.run_id, Clock::now());
    record_fence_losses(trust_.take_fence_losses());  // sent; a refused node may not get it
    refresh_quarantines();
    return risk;
  }
  return std::nullopt;
}

void EngineCore::record_admissions(const std::vector<std::size_t>& nodes) {
  for (const std::size_t node : nodes) {
    if (trust_.fences_missing(node) || partial_repair_[node]) {
      repair_fences(node);
      continue;
    }
    // Its fences are whole: no recorded loss stays behind the admission (same connection, in
    // order, so no engine reads the admission with the loss still recorded).
    RespCommand repaired(3);
    repaired.arg("HDEL").arg(kNodeMarkerKey).arg(marker_field("fences_missing:"));
    nodes_[node]->send(repaired, nullptr, 0);
    RespCommand admit(4);
    admit.arg("HSET").arg(kNodeMarkerKey).arg(marker_field("admitted:")).arg(trust_.run_id(node));
    nodes_[node]->send(admit, nullptr, 0);
  }
}

std::string EngineCore::marker_field(std::string_view field) const {
  std::string scoped(field);
  scoped.append(options_.key_prefix);
  return scoped;
}

void EngineCore::record_fence_losses(const std::vector<NodeTrust::FenceLoss>& losses) {
  for (const auto& [node, evident] : losses) {
    if (evident) {  // for every deployment admitted there
      RespCommand record(5);
      record.arg("EVAL")
          .arg(kNodeFenceLossScript)
          .arg(std::int64_t{1})
          .arg(kNodeMarkerKey)
          .arg(options_.key_prefix);
      nodes_[node]->send(record, nullptr, 0);
    } else {
      RespCommand record(4);
      record.arg("HSET").arg(kNodeMarkerKey).arg(marker_field("fences_missing:")).arg("1");
      nodes_[node]->send(record, nullptr, 0);
    }
  }
}

void EngineCore::repair_fences(std::size_t node) {
  if (repairing_.at(node) || stopped_) return;
  repairing_[node] = true;
  const std::uint64_t generation = trust_.fence_generation(node);
  const auto now = Clock::now();
  if (repair_generation_[node] != generation) {  // the first try for this loss
    repair_generation_[node] = generation;
    first_repair_[node] = now;
  }
  // Sources: voting nodes whose own fences were copied back strictly (or never lost).
  std::vector<std::size_t> sources;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (i != node && nodes_[i]->ready() && votes(i, now) && !partial_repair_[i])
      sources.push_back(i);
  }
  const std::size_t strict_needed = FenceRepair::sources_needed(nodes_.size(), nodes_.size());
  std::size_t needed = FenceRepair::sources_needed(nodes_.size(), sources.size());
  // Best effort only when too few nodes kept their fences for a strict repair ever to succeed
  // (the others lost theirs too), or strict repairs kept failing for kBestEffortPatience (nodes
  // down for longer): a node still handshaking, or a blip of one, must not make it so.
  std::size_t kept = 0;  // other nodes that may hold their fences: not seen yet, or trusted with
  for (std::size_t i = 0; i < nodes_.size(); ++i) {  // them, connected or not
    if (i != node && (!trust_.seen(i) || (!trust_.fences_missing(i) && !partial_repair_[i])))
      ++kept;
  }
  if (needed < strict_needed && kept >= strict_needed &&
      now - first_repair_[node] < kBestEffortPatience)
    needed = strict_needed;
  const bool strict = needed >= strict_needed;
  auto repair = std::make_shared<FenceRepair>(
      shared_from_this(), node, std::move(sources), needed,
      [self = shared_from_this(), node, generation, strict](bool complete) {
        self->repairing_[node] = false;
        if (self->stopped_) return;
        if (complete) {
          self->trust_.fences_restored(node, generation);
          // Only a strict repair is recorded for other instances (rule 2); after a best-effort
          // one the node votes here, and a strict one is tried again until it succeeds.
          self->partial_repair_[node] = !strict;
          if (strict && !self->trust_.fences_missing(node)) self->record_admissions({node});
          self->refresh_quarantines();
        }
        // Not complete, best effort only, or lost again while it ran (a new generation): again.
        self->retry_fence_repair(node);
      });
  repair->start();
}

void EngineCore::retry_fence_repair(std::size_t node) {
  const auto needs_repair = [this, node] {
    return trust_.voting(node, Clock::now()) &&
           (trust_.fences_missing(node) || partial_repair_[node]);
  };
  if (!needs_repair()) return;
  auto timer = std::make_shared<asio::steady_timer>(strand_, kFenceRepairRetry);
  timer->async_wait([self = shared_from_this(), node, timer,
                     needs_repair](const boost::system::error_code& ec) {
    if (ec || self->stopped_ || !needs_repair()) return;
    // After a best-effort repair, a strict one waits until enough nodes vote for it (each
    // repair scans every fence).
    std::size_t others = 0;
    const auto now = Clock::now();
    for (std::size_t i = 0; i < self->nodes_.size(); ++i) {
      if (i != node && self->nodes_[i]->ready() && self->votes(i, now) && !self->partial_repair_[i])
        ++others;
    }
    const std::size_t strict =
        FenceRepair::sources_needed(self->nodes_.size(), self->nodes_.size());
    if (self->trust_.fences_missing(node) || others >= strict) {
      self->repair_fences(node);
    } else {
      self->retry_fence_repair(node);
    }
  });
}

void EngineCore::record_suspects(const std::vector<std::size_t>& nodes, const std::string& why) {
  for (const std::size_t node : nodes) {
    // The evictions this engine counted in this incarnation happened before now: covered.
    const EvictionsSeen& seen = evictions_seen_.at(node);
    RespCommand record(6);
    record.arg("EVAL")
        .arg(kNodeSuspectScript)
        .arg(std::int64_t{1})
        .arg(kNodeMarkerKey)
        .arg(trust_.run_id(node))
        .arg(seen.run_id == trust_.run_id(node) ? std::to_string(seen.evicted) : std::string());
    nodes_[node]->send(record, nullptr, 0);
    if (observer_ != nullptr) observer_->on_node_lost_keys(node, nodes_[node]->address(), why);
  }
}

void EngineCore::on_node_refused(std::size_t node, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(refusals_mutex_);
    refusals_.at(node) = why;
  }
  if (observer_ != nullptr) observer_->on_node_refused(node, nodes_[node]->address(), why);
}

void EngineCore::on_node_unresolved(std::size_t node, const std::string& why) {
  if (observer_ != nullptr) observer_->on_node_unresolved(node, nodes_[node]->address(), why);
}

void EngineCore::on_node_address_changed(std::size_t node, const std::string& from,
                                         const std::string& to) {
  if (observer_ != nullptr)
    observer_->on_node_address_changed(node, nodes_[node]->address(), from, to);
}

void EngineCore::on_node_down(std::size_t node, const std::string& why) {
  if (observer_ != nullptr) observer_->on_node_down(node, nodes_[node]->address(), why);
  refresh_voting_count();
}

void EngineCore::refresh_quarantines() {
  // Votes consult trust_ directly; the flags and the voting count are what metrics and readiness
  // read, and the timers end each quarantine on time (and record the admission).
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const auto until = trust_.quarantined_until(i);
    // Held out also while its fences are being copied back (repair_fences).
    const bool was_quarantined =
        quarantined_flags_[i].exchange(until.has_value() || trust_.fences_missing(i));
    unjudged_flags_[i].store(until && *until != Clock::time_point::max() && trust_.unjudged(i),
                             std::memory_order_relaxed);
    quarantine_ends_[i] =
        until && *until != Clock::time_point::max() ? until->time_since_epoch().count() : 0;
    if (!until) {
      if (was_quarantined) quarantine_timers_[i]->cancel();
      continue;
    }
    asio::steady_timer& timer = *quarantine_timers_[i];
    if (was_quarantined && timer.expiry() == *until) continue;
    timer.expires_at(*until);  // cancels an earlier wait
    timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec == asio::error::operation_aborted || self->stopped_) return;
      self->end_waits();
    });
  }
  refresh_voting_count();
  note_awaited_nodes();
}

std::optional<std::chrono::milliseconds> EngineCore::votes_again_in(std::size_t node) const {
  const std::int64_t end = quarantine_ends_[node].load(std::memory_order_relaxed);
  if (end == 0 || !node_quarantined(node)) return std::nullopt;
  const auto left = Clock::time_point(Clock::duration(end)) - Clock::now();
  return std::max(std::chrono::ceil<std::chrono::milliseconds>(left), std::chrono::milliseconds(0));
}

Error EngineCore::shortfall_error(const QuorumTally& tally) const {
  Error error{ErrorCode::kUnavailable, tally.shortfall(), std::nullopt};
  explain_quarantines(error);
  return error;
}

Error EngineCore::refusal_error(std::string refusal) const {
  // Only the refusal for want of a majority: the others (another token store, a ttl not
  // covered, …) do not end when a quarantine does.
  const bool for_want_of_nodes = refusal.starts_with(InstanceRegistry::kNotYetChecked);
  Error error{ErrorCode::kUnavailable, std::move(refusal), std::nullopt};
  if (for_want_of_nodes) explain_quarantines(error);
  return error;
}

void EngineCore::explain_quarantines(Error& error) const {
  std::string quarantined;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i]->ready() || !node_quarantined(i)) continue;
    quarantined += (quarantined.empty() ? "" : ", ") + nodes_[i]->address();
    const auto left = votes_again_in(i);
    if (!left) {
      quarantined += trust_.fences_missing(i) && trust_.voting(i, Clock::now())
                         ? " (its fences are being copied back)"
                         : " (refused)";
      continue;
    }
    quarantined += (node_unjudged(i) ? " (looks new: judged within " : " (votes again in ") +
                   std::to_string((left->count() + 999) / 1000) + " s)";
    if (!error.retry_after || *left < *error.retry_after) error.retry_after = *left;
  }
  if (!quarantined.empty()) {
    error.message += ". Quarantined: " + quarantined +
                     " — a node that restarted without its data (or lost writes) waits out the "
                     "longest lease it may have lost; /readyz shows each node";
  }
}

void EngineCore::note_awaited_nodes() {
  std::string awaited;
  for (std::size_t i = 0; trust_.awaiting_birth() && i < nodes_.size(); ++i) {
    if (!trust_.seen(i)) awaited += (awaited.empty() ? "" : ", ") + nodes_[i]->address();
  }
  if (!awaited.empty()) {
    awaited = "no lock node that answered has a record of any grant, and " + awaited +
              " has not answered yet. A new cluster's first start waits for every node, even "
              "with --new-lock-nodes: one that does not answer may hold what the others lost (a "
              "live lease, the binding to a token store), and a node that lost its data looks "
              "new. Bring it up, or correct its address";
  }
  std::lock_guard<std::mutex> lock(refusals_mutex_);
  awaiting_birth_ = std::move(awaited);
}

void EngineCore::refresh_voting_count() {
  std::size_t voting = 0;
  const auto now = Clock::now();
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i]->ready() && votes(i, now)) ++voting;
  }
  voting_nodes_ = voting;
}

}  // namespace fencelock::storage
