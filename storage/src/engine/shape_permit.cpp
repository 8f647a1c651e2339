// A semaphore permit (kAcquirePermitScript): one slot key of the semaphore's, beside its config
// key (the live count); its extend and release claim that slot. A refusal lists the slots free on
// that node; a permit refused on its slot moves at once to a slot that a quorum of the answers
// shows free.
#include <algorithm>
#include <random>

#include "engine/acquire_shape.h"
#include "fencelock/storage/lease_secret.h"

namespace fencelock::storage {

std::string permit_slot_name(std::string_view semaphore, std::uint32_t slot) {
  std::string name(semaphore);
  name.append("#permit:").append(std::to_string(slot));
  return name;
}

std::string permit_config_name(std::string_view semaphore) {
  return std::string(semaphore) + "#permits";
}

ClaimTarget permit_claim(const EngineCore& core, Script script, const std::string& name,
                         std::uint32_t permits, std::uint32_t slot, const LeaseClaim& claim) {
  ClaimTarget target;
  target.script = script;
  target.names.push_back(permit_slot_name(name, slot));
  target.keys.push_back(core.key_of(target.names.front()));
  target.keys.push_back(core.key_of(permit_config_name(name)));
  target.claim = claim.proof + permit_claim_text(claim.token, permits, slot, claim.owner);
  target.owned = !claim.owner.empty();
  return target;
}

namespace {

class PermitShape final : public AnsweringShape<Permit> {
 public:
  PermitShape(const EngineCore& core, const std::string& name, std::uint32_t permits,
              RedlockEngine::PermitHandler done)
      : AnsweringShape(std::move(done)), permits_(permits) {
    keys_.push_back(core.key_of(permit_config_name(name)));
    for (std::uint32_t i = 0; i < permits_; ++i) {
      slot_names_.push_back(permit_slot_name(name, i));
      keys_.push_back(core.key_of(slot_names_.back()));
    }
  }

  const std::vector<std::string>& queues() const override { return slot_names_; }
  bool several_queues() const override { return true; }

  // It queues only once every slot has waiters (a free slot is worth a try).
  bool behind_waiters(const WaiterQueues& waiters) const override {
    return std::all_of(slot_names_.begin(), slot_names_.end(),
                       [&](const std::string& slot) { return waiters.has_waiters(slot); });
  }

  // The first slot at random: permit callers spread over the slots instead of all trying 0.
  void start(EngineCore& core) override {
    slot_ = std::uniform_int_distribution<std::uint32_t>(0, permits_ - 1)(core.rng());
  }

  void begin_attempt(bool /*marking*/) override {
    mismatch_.reset();
    free_votes_.assign(permits_, 0);
    soonest_votes_.assign(permits_, 0);
  }

  RespCommand command(const EngineCore& /*core*/, const AttemptFacts& attempt,
                      bool eval) const override {
    std::vector<std::string> args = attempt_args(attempt);
    args.push_back(std::to_string(slot_));
    args.push_back(attempt.tokens.front());
    return EngineCore::script_command(Script::kAcquirePermit, eval, attempt_keys(keys_, attempt),
                                      args);
  }

  // 1; {-2, "<live N>"} for a semaphore live with another count; or {0, holder, pttl, {free
  // slots}, soonest slot}: holder and pttl are the soonest slot's.
  Vote read_vote(const NodeReply& reply, NodeAnswer& answer) override {
    if (reply.is_tagged(2, -2)) {
      mismatch_ = reply.elements[1].text;
      return Vote::kNo;
    }
    if (!reply.is_array(5)) return read_acquire_reply(reply, answer);  // 1, or an error
    NodeReply head = reply;
    head.elements.resize(3);
    const Vote vote = read_acquire_reply(head, answer);
    for (const NodeReply& free : reply.elements[3].elements) {
      if (free.is_integer() && free.integer >= 0 && free.integer < permits_)
        ++free_votes_[static_cast<std::size_t>(free.integer)];
    }
    const NodeReply& soonest = reply.elements[4];
    if (soonest.is_integer() && soonest.integer >= 0 && soonest.integer < permits_)
      ++soonest_votes_[static_cast<std::size_t>(soonest.integer)];
    return vote;
  }

  std::optional<Error> own_refusal() const override {
    if (!mismatch_) return std::nullopt;
    return make_error(ErrorCode::kPermitsMismatch,
                      "the semaphore is live with " + *mismatch_ +
                          " permits; it takes another count only once none is held");
  }

  std::string held_message() const override { return "every permit of the semaphore is held"; }

  // The attempt wrote (at most) its slot key; the config key may stay: it only lives as long as a
  // permit's ttl, and a count check looks at the slots themselves.
  void clean_up(EngineCore& core, const AttemptFacts& attempt) const override {
    core.release_everywhere(std::span<const std::string>(&keys_[1 + slot_], 1), attempt.value);
  }

  AfterRefusal refused(EngineCore& core, const RefusalFacts& facts) override {
    bool soon = false;
    if (!facts.released_while_out.empty()) {
      soon = true;  // once more at once, at a released slot
      for (std::uint32_t slot = 0; slot < slot_names_.size(); ++slot) {
        if (slot_names_[slot] == facts.released_while_out.front()) slot_ = slot;
      }
    }
    // Refused on its slot while another slot is free on a quorum: it tries that one at once (at
    // most once per slot before it sleeps or gives up: the answers may keep shifting).
    if (!core.stopped()) {
      if (const auto free = free_slot_to_try(core); free && hops_ < permits_) {
        ++hops_;
        slot_ = *free;
        return AfterRefusal::kTryAgainNow;
      }
    }
    return soon ? AfterRefusal::kTryAgainSoon : AfterRefusal::kAsUsual;
  }

  void sleeping() override { hops_ = 0; }

  void grant(EngineCore& core, const AttemptFacts& attempt, GrantFacts grant) override {
    Permit permit;
    permit.name = std::move(grant.names.front());
    permit.permits = permits_;
    permit.slot = slot_;
    permit.proof = lease_proof_of_text(
        attempt.value, permit_claim_text(grant.tokens.front(), permits_, slot_, grant.owner));
    permit.token = grant.tokens.front();
    set_times(permit, grant);
    answer(core, std::move(permit));
  }

 private:
  // A slot free on a quorum of the answers to try at once, if any; otherwise slot_ becomes the
  // slot to try after a sleep.
  std::optional<std::uint32_t> free_slot_to_try(const EngineCore& core) {
    const auto most = [](const std::vector<std::uint32_t>& votes) {
      return static_cast<std::uint32_t>(std::max_element(votes.begin(), votes.end()) -
                                        votes.begin());
    };
    const std::uint32_t free = most(free_votes_);
    if (free != slot_ && free_votes_[free] >= core.quorum()) return free;
    // None free: after the sleep, try the slot that frees first on most nodes; the expiry sleep
    // only knows its holder if the answers agree on one (otherwise the retry delay paces it).
    if (soonest_votes_[most(soonest_votes_)] > 0) slot_ = most(soonest_votes_);
    return std::nullopt;
  }

  std::uint32_t permits_;
  std::vector<std::string> slot_names_;
  std::vector<std::string> keys_;             // the config key, then every slot key
  std::uint32_t slot_ = 0;                    // the slot of the attempt
  std::uint32_t hops_ = 0;                    // attempts moved to a free slot without a sleep
  std::optional<std::string> mismatch_;       // a node's live count of another semaphore
  std::vector<std::uint32_t> free_votes_;     // per slot, the answers that found it free
  std::vector<std::uint32_t> soonest_votes_;  // per slot, answers it frees first on
};

}  // namespace

std::unique_ptr<AcquireShape> permit_shape(const EngineCore& core, const std::string& name,
                                           std::uint32_t permits,
                                           RedlockEngine::PermitHandler done) {
  return std::make_unique<PermitShape>(core, name, permits, std::move(done));
}

}  // namespace fencelock::storage
