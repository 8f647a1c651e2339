// A lock: one key. Its acquire runs kAcquireLockScript (or, naming a request,
// kAcquireLockRequestScript, which also finds the request's earlier grant: acquire_repeat.cpp);
// its extend and release claim that key. Also what every shape shares.
#include <algorithm>

#include "engine/acquire_shape.h"
#include "engine/lease_value.h"
#include "fencelock/storage/lease_secret.h"

namespace fencelock::storage {

Vote read_acquire_reply(const NodeReply& reply, NodeAnswer& answer) {
  if (reply.is_integer(1)) {
    answer.kind = NodeAnswer::Kind::kFree;
    return Vote::kYes;
  }
  if (reply.is_tagged(3, 0)) {
    const NodeReply& holder = reply.elements[1];
    const NodeReply& pttl = reply.elements[2];
    if (holder.is_string() && pttl.is_integer() && pttl.integer >= 0) {
      answer.kind = NodeAnswer::Kind::kHeld;
      answer.holder = holder.text;
      answer.remaining = std::chrono::milliseconds(pttl.integer);
    }
    return Vote::kNo;
  }
  return Vote::kFailed;
}

bool contains(std::span<const std::string> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool AcquireShape::behind_waiters(const WaiterQueues& waiters) const {
  return std::any_of(queues().begin(), queues().end(),
                     [&](const std::string& queue) { return waiters.has_waiters(queue); });
}

Lease lock_lease(const AttemptFacts& attempt, GrantFacts grant) {
  Lease lease;
  lease.name = std::move(grant.names.front());
  lease.proof = lease_proof(attempt.value, grant.tokens.front(), grant.owner);
  lease.token = grant.tokens.front();
  set_times(lease, grant);
  lease.repeated = grant.repeated;
  return lease;
}

std::vector<std::string> attempt_keys(std::span<const std::string> own,
                                      const AttemptFacts& attempt) {
  std::vector<std::string> keys(own.begin(), own.end());
  keys.insert(keys.end(), attempt.fence_keys.begin(), attempt.fence_keys.end());
  return keys;
}

std::vector<std::string> attempt_args(const AttemptFacts& attempt) {
  return {written_lease_value(attempt.value, attempt.tokens.front(), attempt.value_tail),
          std::to_string(attempt.ttl.count()), std::string(attempt.mark)};
}

ClaimTarget lock_claim(const EngineCore& core, Script script, std::string_view name,
                       const LeaseClaim& claim) {
  ClaimTarget target;
  target.script = script;
  target.keys.push_back(core.key_of(name));
  target.names.emplace_back(name);
  target.claim = claim.proof + claim_token_text(claim.token, claim.owner);
  target.owned = !claim.owner.empty();
  return target;
}

namespace {

class LockShape final : public AnsweringShape<Lease> {
 public:
  LockShape(const EngineCore& core, const std::string& name, RedlockEngine::AcquireHandler done)
      : AnsweringShape(std::move(done)), queues_{name}, key_(core.key_of(name)) {}

  const std::vector<std::string>& queues() const override { return queues_; }

  RespCommand command(const EngineCore& /*core*/, const AttemptFacts& attempt,
                      bool eval) const override {
    std::vector<std::string> args = attempt_args(attempt);
    args.push_back(attempt.tokens.front());
    // The request's digest and the probe flag go only to the script that reads them.
    const bool request = !attempt.request.empty();
    if (request) {
      args.emplace_back(attempt.request);
      args.emplace_back(attempt.probing ? "1" : "");
    }
    return EngineCore::script_command(request ? Script::kAcquireLockRequest : Script::kAcquireLock,
                                      eval, attempt_keys({&key_, 1}, attempt), args);
  }

  Vote read_vote(const NodeReply& reply, NodeAnswer& answer) override {
    return read_acquire_reply(reply, answer);
  }

  std::string held_message() const override { return "the lock is held by another lease"; }

  void clean_up(EngineCore& core, const AttemptFacts& attempt) const override {
    core.release_everywhere(std::span<const std::string>(&key_, 1), attempt.value);
  }

  const std::string* lock_key() const override { return &key_; }

  void grant(EngineCore& core, const AttemptFacts& attempt, GrantFacts grant) override {
    answer(core, lock_lease(attempt, std::move(grant)));
  }

 private:
  std::vector<std::string> queues_;
  std::string key_;
};

}  // namespace

std::unique_ptr<AcquireShape> lock_shape(const EngineCore& core, const std::string& name,
                                         RedlockEngine::AcquireHandler done) {
  return std::make_unique<LockShape>(core, name, std::move(done));
}

}  // namespace fencelock::storage
