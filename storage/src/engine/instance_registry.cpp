#include "engine/instance_registry.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <charconv>
#include <utility>

#include "engine/engine_core.h"
#include "engine/node_scripts.h"
#include "fencelock/storage/lease_timing.h"

namespace fencelock::storage {

namespace {
constexpr std::string_view kSharedIdentity = "shared";
}  // namespace

const std::string_view InstanceRegistry::kNotYetChecked =
    "this fencelockd has not yet confirmed with a majority of lock nodes which token store they "
    "serve";

InstanceRegistry::InstanceRegistry(EngineCore& core, const std::string& exclusive_tokens,
                                   const std::string& shared_tokens, TokenOrder token_order)
    : core_(core),
      identity_(!exclusive_tokens.empty() ? exclusive_tokens
                : !shared_tokens.empty()  ? shared_tokens
                                          : std::string(kSharedIdentity)),
      exclusive_(!exclusive_tokens.empty()),
      token_order_(token_order),
      key_("fencelock:#instances:" + core.options().key_prefix),
      timer_(core.strand()) {}

void InstanceRegistry::start() {
  schedule(std::chrono::milliseconds(0));
}

void InstanceRegistry::stop() {
  if (stopped_) return;
  stopped_ = true;
  timer_.cancel();
  // The tokens handed out since the last heartbeat go into the nodes' mark before the entry goes
  // (one connection per node: in this order).
  core_.broadcast(heartbeat("0"), nullptr, 0);
  // An instance without quarantine withdraws its own declaration; one with it leaves it standing:
  // its leases may outlive it.
  const bool withdraw = !core_.options().quarantine_restarted_nodes;
  RespCommand remove(withdraw ? 5 : 4);
  remove.arg("HDEL").arg(key_).arg(core_.engine_id()).arg("#seq:" + core_.engine_id());
  if (withdraw) remove.arg("#quarantine:off:" + core_.engine_id());
  core_.broadcast(remove, nullptr, 0);
}

std::optional<std::string> InstanceRegistry::refusal(Clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return refusal_locked(now);
}

std::optional<std::string> InstanceRegistry::refusal(Clock::time_point now,
                                                     std::chrono::milliseconds ttl) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto refused = refusal_locked(now)) return refused;
  return ttl_refusal_locked(ttl);
}

std::optional<std::string> InstanceRegistry::ttl_refusal(std::chrono::milliseconds ttl) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ttl_refusal_locked(ttl);
}

std::optional<std::string> InstanceRegistry::ttl_refusal_locked(
    std::chrono::milliseconds ttl) const {
  if (ttl <= others_ttl_) return std::nullopt;
  return "another fencelockd of this deployment knows leases only up to " +
         std::to_string(others_ttl_.count()) + " ms (a shorter --max-ttl; it reads this one's " +
         "from the lock nodes within a second or two): a ttl of " + std::to_string(ttl.count()) +
         " ms waits until it has, so that its quarantine covers such a lease (run every instance "
         "with the same --max-ttl)";
}

std::optional<std::string> InstanceRegistry::refusal_locked(Clock::time_point now) const {
  if (!went_back_.empty()) return went_back_;
  if (exclusive_ && !conflict_.empty()) {
    return "another fencelockd shares these lock nodes (its tokens come from " + conflict_ +
           "); an embedded (SQLite) token source serves one instance only: give every instance the "
           "same shared token source (--tokens redis://...)";
  }
  if (!bound_elsewhere_.empty()) {
    return "these lock nodes have granted with tokens from another token store (" +
           bound_elsewhere_ + ", this fencelockd: " + identity_ +
           "); tokens from this one could repeat or go backwards. Use the token source the nodes "
           "were used with (docs/operations.md, \"Token source\")";
  }
  if (!overlap_.empty()) {
    return "another deployment on these lock nodes runs with --key-prefix \"" + overlap_ +
           "\", which overlaps this one's (\"" + core_.options().key_prefix +
           "\"): one is the start of the other, so their lock keys collide while their registries "
           "do not. Give each deployment a prefix that is not the start of another's";
  }
  if (now < other_setting_until_) {
    return core_.options().quarantine_restarted_nodes
               ? "an instance of this deployment runs with --quarantine off: it may grant over a "
                 "lease this one granted once lock nodes restart, so this fencelockd refuses "
                 "until it stops (run every instance with the same --quarantine)"
               : "instances of this deployment run with --quarantine on: one without it may "
                 "grant over their leases once lock nodes restart, so this fencelockd refuses "
                 "until their leases may have ended (run every instance with the same "
                 "--quarantine)";
  }
  if (forgotten_with_history_ && !bound_quorum_) {
    return "every lock node answered without a record of this deployment while the token store "
           "has a history (they lost their data, or this --key-prefix is new on a store used "
           "before): with --quarantine off nothing shows whether a lease granted before is still "
           "live. Once none can be (the longest --max-ttl has passed), start once with "
           "--new-lock-nodes";
  }
  if (!checked_at_ || (!bound_quorum_ && !was_ready_)) return std::string(kNotYetChecked);
  if (!bound_quorum_) {
    return "only " + std::to_string(bound_here_) +
           " voting lock node(s) record this fencelockd's token store (" + identity_ +
           "), fewer than a majority: nodes that lost their data are bound again by the next "
           "registry round and vote once their quarantine ends (docs/operations.md, \"Token "
           "source\")";
  }
  if (exclusive_ && now - *checked_at_ > kFreshness) {
    return "this fencelockd has an embedded (SQLite) token source and has not confirmed recently "
           "that it is the only instance on these lock nodes";
  }
  if (now - *checked_at_ > kSharedFreshness) {
    return "this fencelockd has not reached a majority of lock nodes with its registry check "
           "recently";
  }
  return std::nullopt;
}

std::uint64_t InstanceRegistry::token_floor() const {
  std::lock_guard<std::mutex> lock(mutex_);
  switch (token_order_) {
    case TokenOrder::kPerName:
      return 0;
    case TokenOrder::kAboveRestart:
      return mark_at_ready_;
    case TokenOrder::kGlobal:
      return mark_seen_;
  }
  return 0;
}

std::optional<std::string> InstanceRegistry::token_refusal(Clock::time_point now,
                                                           std::uint64_t token,
                                                           std::uint64_t floor) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto refused = refusal_locked(now)) return refused;
  if (token_order_ == TokenOrder::kPerName) return std::nullopt;
  if (token <= floor) {
    return refuse_for_good("the token store went back: it handed out token " +
                           std::to_string(token) + ", but the lock nodes saw token " +
                           std::to_string(floor) +
                           " handed out before (a token file or etcd cluster restored from a "
                           "backup?); tokens from it could repeat, so this fencelockd grants "
                           "nothing (docs/operations.md, \"Token source\")");
  }
  highest_handed_out_ = std::max(highest_handed_out_, token);
  return std::nullopt;
}

std::optional<std::string> InstanceRegistry::current_refusal(Clock::time_point now,
                                                             std::uint64_t current,
                                                             std::uint64_t floor) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto refused = refusal_locked(now)) return refused;
  if (token_order_ != TokenOrder::kGlobal || current >= floor) return std::nullopt;
  return refuse_for_good("the token store went back: it reads " + std::to_string(current) +
                         " as its current token, but the lock nodes saw token " +
                         std::to_string(floor) +
                         " handed out before (an etcd cluster restored from a backup?); tokens "
                         "from it could repeat, so this fencelockd grants nothing "
                         "(docs/operations.md, \"Token source\")");
}

std::string InstanceRegistry::refuse_for_good(std::string why) {
  went_back_ = std::move(why);
  // Once, and on the strand as every observer hook: the caller may be a token source's thread.
  boost::asio::post(timer_.get_executor(), [self = shared_from_this(), why = went_back_] {
    if (self->stopped_) return;  // the engine (and its observer) may be going away
    if (auto* observer = self->core_.observer()) observer->on_grants_refused_for_good(why);
  });
  return went_back_;
}

std::uint64_t InstanceRegistry::acked(std::size_t node) const {
  return node < acked_.size() ? acked_[node] : 0;
}

void InstanceRegistry::forget_acked(std::size_t node) {
  if (node < acked_.size()) acked_[node] = 0;
}

void InstanceRegistry::schedule(std::chrono::milliseconds delay) {
  timer_.expires_after(delay);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec == boost::asio::error::operation_aborted || self->stopped_) return;
    self->round();
  });
}

void InstanceRegistry::round() {
  ++round_;
  round_started_ = Clock::now();
  // Out of touch for longer than an entry lives (paused, partitioned): another instance may have
  // started without seeing this one and granted a ttl longer than it knows.
  bool out_of_touch = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    out_of_touch = checked_at_ && round_started_ - *checked_at_ > kEntryLifetime;
  }
  if (out_of_touch) core_.forget_longest_ttl();
  answers_ = 0;
  replies_ = 0;
  round_conflict_.clear();
  round_bound_elsewhere_.clear();
  round_bound_here_ = 0;
  round_bound_any_ = 0;
  round_unbound_ = 0;
  round_all_voting_ = true;
  round_voting_answers_ = 0;
  round_mark_ = 0;
  round_other_until_ = Clock::time_point{};
  round_others_ttl_ = std::chrono::milliseconds::max();
  round_overlap_.clear();
  round_history_answers_ = 0;
  round_history_ttl_ = std::chrono::milliseconds(0);
  last_expiry_.resize(core_.node_count());  // the nodes are made after this registry
  acked_.resize(core_.node_count());
  round_expiry_.resize(core_.node_count());
  for (auto& seen : round_expiry_) seen.clear();
  // A permission is used once, by the round right after the one that granted it.
  round_mode_ = std::exchange(next_mode_, BindMode::kRead);
  const char* mode = round_mode_ == BindMode::kBirth    ? "1"
                     : round_mode_ == BindMode::kRepair ? "2"
                                                        : "0";
  core_.broadcast(heartbeat(mode), shared_from_this(), round_);
}

RespCommand InstanceRegistry::heartbeat(const char* mode) const {
  std::uint64_t highest = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    highest = highest_handed_out_;
  }
  const EngineOptions& options = core_.options();
  const bool quarantine = options.quarantine_restarted_nodes;
  // "on" stands as long as this engine may grant after this heartbeat (a verdict lasts
  // kSharedFreshness) plus its longest lease; "off", as long as it may grant.
  const std::chrono::milliseconds declared =
      quarantine ? kSharedFreshness + options.max_ttl +
                       std::chrono::ceil<std::chrono::milliseconds>(
                           drift_allowance(options.max_ttl, options.drift_factor))
                 : kSharedFreshness;
  RespCommand command(16);
  command.arg("EVAL")
      .arg(kRegistryHeartbeatScript)
      .arg(std::int64_t{2})
      .arg(key_)
      .arg(kNodeMarkerKey)
      .arg(core_.engine_id())
      .arg(identity_)
      .arg(kEntryLifetime.count())
      .arg(mode)
      .arg(std::to_string(highest))
      .arg(std::int64_t{round_})
      .arg(core_.options().max_ttl.count())
      .arg(quarantine ? "on" : "off")
      .arg(declared.count())
      .arg(core_.longest_known_ttl().count())
      .arg(options.key_prefix);
  return command;
}

void InstanceRegistry::on_reply(std::size_t node, std::uint32_t cookie, NodeReply reply) {
  if (stopped_ || cookie != round_) return;
  ++replies_;
  if (reply.is_array(8)) {
    ++answers_;
    if (!reply.elements[6].text.empty()) round_overlap_ = reply.elements[6].text;
    // Instances of this deployment with the other --quarantine setting: evidence from any node.
    const std::string& stands_text = reply.elements[5].text;
    long long stands = 0;
    std::from_chars(stands_text.data(), stands_text.data() + stands_text.size(), stands);
    // Counted from now, after the script ran: never ends before the node's own deadline.
    if (stands > 0) {
      round_other_until_ =
          std::max(round_other_until_, Clock::now() + std::chrono::milliseconds(stands));
    }
    // The longest ttl any engine declared on this node, from any node at any time: a restarted
    // node's fresh marker says only ours, the others still carry the largest.
    const std::string& max_ttl_text = reply.elements[4].text;
    long long max_ttl = 0;
    std::from_chars(max_ttl_text.data(), max_ttl_text.data() + max_ttl_text.size(), max_ttl);
    core_.note_max_ttl(std::chrono::milliseconds(max_ttl), false);
    if (reply.elements[7].text == "1") {
      ++round_history_answers_;
      round_history_ttl_ = std::max(round_history_ttl_, std::chrono::milliseconds(max_ttl));
    }
    // What our previous heartbeat left here: less than the node acknowledged means it lost writes.
    const std::string& previous_text = reply.elements[3].text;
    std::uint64_t previous = 0;
    std::from_chars(previous_text.data(), previous_text.data() + previous_text.size(), previous);
    if (previous < acked_[node]) core_.node_lost_writes(node, previous, acked_[node]);
    acked_[node] = round_;
    const bool votes = core_.node_votes(node);
    round_all_voting_ = round_all_voting_ && votes;
    if (votes) ++round_voting_answers_;
    const std::string& bound = reply.elements[0].text;
    if (bound.empty()) {
      ++round_unbound_;
    } else if (bound != identity_) {
      round_bound_elsewhere_ = bound;  // a binding is evidence wherever it is found
    } else {
      ++round_bound_any_;
      if (votes) ++round_bound_here_;
    }
    for (const NodeReply& other : reply.elements[1].elements) note_other_entry(node, other.text);
    // A mark is a token some engine handed out, whatever the node's state: evidence from any node.
    const std::string& mark_text = reply.elements[2].text;
    std::uint64_t mark = 0;
    const auto [end, error] =
        std::from_chars(mark_text.data(), mark_text.data() + mark_text.size(), mark);
    if (error == std::errc() && end == mark_text.data() + mark_text.size()) {
      round_mark_ = std::max(round_mark_, mark);
    }
  }
  // Every node answers within the node timeout (or is answered as timed out), so waiting for all
  // of them costs at most that, and a conflict on any node is seen.
  if (replies_ == core_.node_count()) finish_round();
}

void InstanceRegistry::note_other_entry(std::size_t node, std::string_view entry) {
  // "<engine id> <expiry ms> <longest ttl ms> <identity>"; an older version's lacks the ttl
  const auto first = entry.find(' ');
  const auto second = first == std::string_view::npos ? first : entry.find(' ', first + 1);
  if (second == std::string_view::npos) return;  // not written by this version: ignore
  const std::string_view engine = entry.substr(0, first);
  const std::string_view expiry = entry.substr(first + 1, second - first - 1);
  std::string_view identity = entry.substr(second + 1);
  if (const auto third = identity.find(' '); third != std::string_view::npos) {
    long long ttl = 0;
    const auto [end, error] = std::from_chars(identity.data(), identity.data() + third, ttl);
    if (error == std::errc() && end == identity.data() + third) {
      round_others_ttl_ = std::min(round_others_ttl_, std::chrono::milliseconds(ttl));
      identity = identity.substr(third + 1);
    }
  }
  if (identity != identity_) {
    round_conflict_ = std::string(identity);
    return;
  }
  if (!exclusive_) return;  // a shared store serves any number of instances
  // Another engine with this very store id: a crashed predecessor's entry stands still until it
  // expires; one whose expiry moves on between two rounds is a live process on a copy of the file.
  const auto& before = last_expiry_[node];
  const auto previous = before.find(std::string(engine));
  if (previous != before.end() && previous->second != expiry) {
    round_conflict_ = "a copy of this token file (" + identity_ + ")";
  }
  round_expiry_[node].insert_or_assign(std::string(engine), std::string(expiry));
}

void InstanceRegistry::finish_round() {
  const bool reached_quorum = answers_ >= core_.quorum();
  // Markers with this deployment's history from a majority, in one round: any longer ttl granted
  // meanwhile was raised on a majority, which shares a node with this one.
  if (round_history_answers_ >= core_.quorum()) core_.note_max_ttl(round_history_ttl_, true);
  last_expiry_.swap(round_expiry_);
  bool bind_now = false;
  bool awaiting_birth = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!round_bound_elsewhere_.empty()) bound_elsewhere_ = round_bound_elsewhere_;
    // Any node's word is enough; a quorum round without it ends it (the other one stopped).
    if (!round_overlap_.empty()) {
      overlap_ = round_overlap_;
    } else if (reached_quorum) {
      overlap_.clear();
    }
    // Any node's word is enough to refuse. Only "off" is ever withdrawn (a clean stop): seen by
    // an engine with quarantine, a quorum round without it ends the refusal early.
    if (round_other_until_ != Clock::time_point{}) {
      other_setting_until_ = std::max(other_setting_until_, round_other_until_);
    } else if (reached_quorum && core_.options().quarantine_restarted_nodes) {
      other_setting_until_ = Clock::time_point{};
    }
    if (reached_quorum) {
      checked_at_ = round_started_;
      conflict_ = round_conflict_;
      others_ttl_ = round_others_ttl_;
    }
    // kAboveRestart's floor is learned until the first ready round, included; afterwards a higher
    // mark may come from another name's counter, which may be ahead and still right.
    if (!was_ready_) mark_at_ready_ = std::max(mark_at_ready_, round_mark_);
    mark_seen_ = std::max(mark_seen_, round_mark_);
    // How many nodes are bound is judged only from a quorum of voting answers: a voting node whose
    // answer was late is not a node that forgot.
    if (round_voting_answers_ >= core_.quorum()) {
      bound_here_ = round_bound_here_;
      bound_quorum_ = round_bound_here_ >= core_.quorum();
      was_ready_ = was_ready_ || bound_quorum_;
    }
    const bool nothing_elsewhere = bound_elsewhere_.empty();
    // Without quarantine every node votes as soon as it answers: nodes that all lost their data
    // while the token store has a history may still have held a live lease (an engine with
    // quarantine waits out the window first, node_trust.h rule 4). Such an engine never binds them.
    const bool may_bind_unbound =
        core_.options().quarantine_restarted_nodes || !core_.store_has_history();
    // A first binding reads "unbound" from every node, each voting (node_trust.h rule 4).
    const bool all_unbound = nothing_elsewhere && round_conflict_.empty() && round_all_voting_ &&
                             answers_ == core_.node_count();
    if (round_bound_any_ > 0) forgotten_with_history_ = false;
    if (nothing_elsewhere && round_bound_any_ > 0) {
      next_mode_ = BindMode::kRepair;
    } else if (all_unbound && may_bind_unbound) {
      next_mode_ = BindMode::kBirth;
    } else {
      next_mode_ = BindMode::kRead;
      if (all_unbound) forgotten_with_history_ = true;
    }
    // Some node answered unbound to a round that could not bind it: bind at once.
    bind_now =
        next_mode_ != BindMode::kRead && round_mode_ == BindMode::kRead && round_unbound_ > 0;
    // A cold start waiting only for some node's first answer: look again soon.
    awaiting_birth = next_mode_ == BindMode::kRead && nothing_elsewhere && round_bound_any_ == 0 &&
                     round_conflict_.empty() && answers_ < core_.node_count();
  }
  schedule(bind_now                            ? std::chrono::milliseconds(0)
           : reached_quorum && !awaiting_birth ? kInterval
                                               : kRetry);
}

}  // namespace fencelock::storage
