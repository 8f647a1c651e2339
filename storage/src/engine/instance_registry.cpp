#include "engine/instance_registry.h"

#include "engine/engine_core.h"
#include "engine/lua_scripts.h"

namespace fencelock::storage {

namespace {
constexpr std::string_view kSharedIdentity = "shared";
}  // namespace

const std::string_view InstanceRegistry::kNotYetChecked =
    "this fencelockd has not yet confirmed with a majority of lock nodes which token store they "
    "serve";

InstanceRegistry::InstanceRegistry(EngineCore& core, std::string exclusive_tokens)
    : core_(core),
      identity_(exclusive_tokens.empty() ? std::string(kSharedIdentity)
                                         : std::move(exclusive_tokens)),
      exclusive_(identity_ != kSharedIdentity),
      key_("fencelock:#instances:" + core.options().key_prefix),
      timer_(core.strand()) {}

void InstanceRegistry::start() {
  schedule(std::chrono::milliseconds(0));
}

void InstanceRegistry::stop() {
  if (stopped_) return;
  stopped_ = true;
  timer_.cancel();
  RespCommand remove(3);
  remove.arg("HDEL").arg(key_).arg(core_.engine_id());
  core_.broadcast(remove, nullptr, 0);
}

std::optional<std::string> InstanceRegistry::refusal(Clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mutex_);
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
  if (!checked_at_ || !bound_quorum_) return std::string(kNotYetChecked);
  if (exclusive_ && now - *checked_at_ > kFreshness) {
    return "this fencelockd has an embedded (SQLite) token source and has not confirmed recently "
           "that it is the only instance on these lock nodes";
  }
  return std::nullopt;
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
  answers_ = 0;
  replies_ = 0;
  round_conflict_.clear();
  round_bound_elsewhere_.clear();
  round_bound_here_ = 0;
  round_binds_ = may_bind_;
  RespCommand heartbeat(8);
  heartbeat.arg("EVAL")
      .arg(kRegistryHeartbeatScript)
      .arg(std::int64_t{1})
      .arg(key_)
      .arg(core_.engine_id())
      .arg(identity_)
      .arg(kEntryLifetime.count())
      .arg(round_binds_ ? "1" : "0");
  core_.broadcast(heartbeat, shared_from_this(), round_);
}

void InstanceRegistry::on_reply(std::size_t, std::uint32_t cookie, NodeReply reply) {
  if (stopped_ || cookie != round_) return;
  ++replies_;
  if (reply.kind == NodeReply::Kind::kArray && reply.elements.size() == 2) {
    ++answers_;
    const std::string& bound = reply.elements[0].text;
    if (bound == identity_) {
      ++round_bound_here_;
    } else if (!bound.empty()) {
      round_bound_elsewhere_ = bound;
    }
    for (const NodeReply& other : reply.elements[1].elements) {
      if (other.text != identity_) round_conflict_ = other.text;
    }
  }
  // Every node answers within the node timeout (or is answered as timed out), so waiting for all
  // of them costs at most that, and a conflict on any node is seen.
  if (replies_ == core_.node_count()) finish_round(answers_ >= core_.quorum());
}

void InstanceRegistry::finish_round(bool reached_quorum) {
  bool bind_now = false;
  if (reached_quorum) {
    std::lock_guard<std::mutex> lock(mutex_);
    checked_at_ = round_started_;
    conflict_ = round_conflict_;
    if (!round_bound_elsewhere_.empty()) bound_elsewhere_ = round_bound_elsewhere_;
    bound_quorum_ = round_bound_here_ >= core_.quorum();
    may_bind_ = bound_elsewhere_.empty() && conflict_.empty();
    // Some node answered unbound to a round that could not bind it: bind at once.
    bind_now = may_bind_ && !round_binds_ && round_bound_here_ < answers_;
  }
  schedule(bind_now ? std::chrono::milliseconds(0) : reached_quorum ? kInterval : kRetry);
}

}  // namespace fencelock::storage
