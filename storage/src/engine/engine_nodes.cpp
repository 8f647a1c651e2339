// EngineCore and its lock nodes (engine_core.h): handshakes and rechecks judged by NodeTrust,
// quarantines, lost keys and writes, fence repairs, and the errors that explain a shortfall.
#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <charconv>

#include "engine/engine_core.h"
#include "engine/fence_repair.h"
#include "engine/node_scripts.h"

namespace fencelock::storage {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

// How long a fence repair that could not complete waits before it tries again.
constexpr std::chrono::seconds kFenceRepairRetry{1};
// How long strict fence repairs of one loss must have failed before a best-effort one may run
// (the node is needed for a quorum: fence_repair.h).
constexpr std::chrono::seconds kBestEffortPatience{2};

}  // namespace

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
  if (marker.is_array() && marker.elements.size() >= 2) {
    handshake.admitted = marker.elements[0].text;
    handshake.marked_max_ttl = std::chrono::milliseconds(number(marker.elements[1].text));
  }
  if (marker.is_array() && marker.elements.size() >= 7) {
    handshake.fences_missing = !marker.elements[5].text.empty();
    handshake.legacy_admitted = marker.elements[6].text == "1";
  }
  if (marker.is_array() && marker.elements.size() >= 5) {
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
      marker.is_array() && marker.elements.size() >= 8 ? marker.elements[7].text : std::string();
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
