// A lock set: every name's key in one script (kAcquireSetScript), all or none; its extend and
// release claim every key with the set's tokens and names. A refusal
// names the keys held; the set sleeps until each name that kept a quorum out is released, and a
// name it found free goes on to that name's next waiter instead of waiting behind the set.
#include <algorithm>

#include "engine/acquire_shape.h"
#include "fencelock/storage/lease_secret.h"

namespace fencelock::storage {

ClaimTarget set_claim(const EngineCore& core, Script script, std::vector<std::string> names,
                      const LockSetClaim& claim) {
  ClaimTarget target;
  target.script = script;
  for (const auto& name : names) target.keys.push_back(core.key_of(name));
  target.claim = claim.proof + set_claim_text(claim.tokens, names, claim.owner);
  target.names = std::move(names);
  target.owned = !claim.owner.empty();
  return target;
}

namespace {

class SetShape final : public AnsweringShape<LockSetLease> {
 public:
  SetShape(const EngineCore& core, std::vector<std::string> names,
           RedlockEngine::LockSetHandler done)
      : AnsweringShape(std::move(done)), names_(std::move(names)) {
    for (const auto& name : names_) keys_.push_back(core.key_of(name));
  }

  const std::vector<std::string>& queues() const override { return names_; }
  bool several_queues() const override { return names_.size() > 1; }

  void begin_attempt(bool /*marking*/) override { name_free_votes_.assign(names_.size(), 0); }

  RespCommand command(const EngineCore& /*core*/, const AttemptFacts& attempt,
                      bool eval) const override {
    // The bare lease value: each key's token goes into it on the node.
    std::vector<std::string> args = {
        std::string(attempt.value), std::to_string(attempt.ttl.count()), std::string(attempt.mark)};
    args.insert(args.end(), attempt.tokens.begin(), attempt.tokens.end());
    args.emplace_back(attempt.value_tail);
    return EngineCore::script_command(Script::kAcquireSet, eval, attempt_keys(keys_, attempt),
                                      args);
  }

  // 1, or {0, holder, pttl, {held key indices, 1-based}}: holder and pttl are the key that frees
  // last. Counts, per name, the answers that found it free.
  Vote read_vote(const NodeReply& reply, NodeAnswer& answer) override {
    if (!reply.is_array(4)) {
      const Vote vote = read_acquire_reply(reply, answer);
      if (vote == Vote::kYes) {
        for (auto& votes : name_free_votes_) ++votes;
      }
      return vote;
    }
    std::vector<bool> held(names_.size(), false);
    for (const NodeReply& index : reply.elements[3].elements) {
      if (index.is_integer() && index.integer >= 1 &&
          static_cast<std::size_t>(index.integer) <= held.size())
        held[static_cast<std::size_t>(index.integer) - 1] = true;
    }
    for (std::size_t i = 0; i < held.size(); ++i) {
      if (!held[i]) ++name_free_votes_[i];
    }
    NodeReply head = reply;
    head.elements.resize(3);
    return read_acquire_reply(head, answer);
  }

  std::string held_message() const override { return "a name of the set is held by another lease"; }

  void clean_up(EngineCore& core, const AttemptFacts& attempt) const override {
    core.release_everywhere(keys_, attempt.value);
  }

  AfterRefusal refused(EngineCore& core, const RefusalFacts& facts) override {
    hand_on_wakeups(core, facts);
    if (facts.released_while_out.empty()) return AfterRefusal::kAsUsual;
    // A blocker released while the attempt was out no longer holds it back; once none does, it
    // tries once more at once (empty blockers_: not known what holds it back, so it tries too).
    std::erase_if(blockers_, [&](const std::string& blocker) {
      return contains(facts.released_while_out, blocker);
    });
    return blockers_.empty() ? AfterRefusal::kTryAgainSoon : AfterRefusal::kAsUsual;
  }

  bool sleeps_on(std::string_view queue) override {
    if (blockers_.empty()) return false;
    const auto blocker = std::find(blockers_.begin(), blockers_.end(), queue);
    if (blocker == blockers_.end()) return true;  // it waits for another name
    blockers_.erase(blocker);
    return !blockers_.empty();  // and for others still
  }

  void grant(EngineCore& core, const AttemptFacts& attempt, GrantFacts grant) override {
    LockSetLease lease;
    lease.proof =
        lease_proof_of_text(attempt.value, set_claim_text(grant.tokens, grant.names, grant.owner));
    lease.names = std::move(grant.names);
    lease.tokens = std::move(grant.tokens);
    set_times(lease, grant);
    answer(core, std::move(lease));
  }

 private:
  // Notes its blockers_, and each name whose release woke it that its answers found free on a
  // quorum goes on to the next waiter of that name (which may need nothing else), instead of
  // waiting behind this one.
  void hand_on_wakeups(EngineCore& core, const RefusalFacts& facts) {
    blockers_.clear();
    for (std::size_t i = 0; i < names_.size() && i < name_free_votes_.size(); ++i) {
      if (name_free_votes_[i] < core.quorum()) blockers_.push_back(names_[i]);
    }
    // No name held on enough nodes to keep a quorum out (it lost to another attempt, or a split
    // vote): blockers_ stays empty — not known what to wait for, so any release of its names wakes
    // it. A name found free goes on to the next waiter of that name if a release of it woke this
    // one, or if this one is that name's first waiter (the one that watches it: sleeping on other
    // names, it would keep a free name from everyone behind it).
    for (const std::string& name : names_) {
      if (contains(blockers_, name)) continue;
      if (contains(facts.consumed_wakeups, name) || core.waiters().is_first(name, facts.waiter))
        core.waiters().wake_after(name, facts.waiter);
    }
  }

  std::vector<std::string> names_;  // in canonical order
  std::vector<std::string> keys_;
  std::vector<std::uint32_t> name_free_votes_;  // per name, the answers that found it free
  // The names its last refusal found held on so many nodes that no quorum was free — it sleeps
  // until a release of each (or the expiry sleep); empty: not known, any release wakes it.
  std::vector<std::string> blockers_;
};

}  // namespace

std::unique_ptr<AcquireShape> set_shape(const EngineCore& core, std::vector<std::string> names,
                                        RedlockEngine::LockSetHandler done) {
  return std::make_unique<SetShape>(core, std::move(names), std::move(done));
}

}  // namespace fencelock::storage
