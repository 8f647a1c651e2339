// A revoke's acquire (LockEngine::revoke): the lock key taken whatever holds it, what it overwrote
// kept under a saved key (kRevokeLockScript); the cleanup of a failed revoke puts that back
// (kUndoRevokeScript) and a granted one is settled (kSettleRevokeScript): lua_revoke_scripts.h.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

#include "engine/acquire_shape.h"

namespace fencelock::storage {

std::string revoke_saved_name(std::string_view name, std::string_view lease_id,
                              std::string_view token) {
  return std::string(name).append("#revoked:").append(lease_id).append(":").append(token);
}

namespace {

class RevokeShape final : public AnsweringShape<Lease> {
 public:
  RevokeShape(const EngineCore& core, const std::string& name, std::string_view lease_id,
              RedlockEngine::AcquireHandler done)
      : AnsweringShape(std::move(done)),
        queues_{name},
        key_(core.key_of(name)),
        lease_id_(lease_id) {}

  const std::vector<std::string>& queues() const override { return queues_; }

  RespCommand command(const EngineCore& core, const AttemptFacts& attempt,
                      bool eval) const override {
    std::vector<std::string> keys = attempt_keys({&key_, 1}, attempt);
    keys.push_back(saved_key(core, attempt));
    std::vector<std::string> args = attempt_args(attempt);
    args.push_back(attempt.tokens.front());
    return EngineCore::script_command(Script::kRevokeLock, eval, keys, args);
  }

  Vote read_vote(const NodeReply& reply, NodeAnswer& answer) override {
    return read_acquire_reply(reply, answer);
  }

  std::string held_message() const override { return "the lock is held by another lease"; }

  void clean_up(EngineCore& core, const AttemptFacts& attempt) const override {
    const std::string keys[] = {key_, saved_key(core, attempt)};
    core.release_everywhere(keys, attempt.value, Script::kUndoRevoke);
  }

  const std::string* lock_key() const override { return &key_; }

  void grant(EngineCore& core, const AttemptFacts& attempt, GrantFacts grant) override {
    // Node expiry stays at or after attempt start + ttl: past the deadline the holder is told.
    const auto spent = std::chrono::ceil<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - grant.started);
    const auto left = std::max<std::int64_t>((grant.ttl - spent).count(), 1);
    const std::string keys[] = {key_, saved_key(core, attempt)};
    const std::string args[] = {std::string(attempt.value), std::to_string(left)};
    core.broadcast(EngineCore::script_command(Script::kSettleRevoke, true, keys, args), nullptr, 0);
    answer(core, lock_lease(attempt, std::move(grant)));
  }

 private:
  std::string saved_key(const EngineCore& core, const AttemptFacts& attempt) const {
    return core.key_of(revoke_saved_name(queues_.front(), lease_id_, attempt.tokens.front()));
  }

  std::vector<std::string> queues_;
  std::string key_;
  std::string lease_id_;
};

}  // namespace

std::unique_ptr<AcquireShape> revoke_shape(const EngineCore& core, const std::string& name,
                                           std::string_view lease_id,
                                           RedlockEngine::AcquireHandler done) {
  return std::make_unique<RevokeShape>(core, name, lease_id, std::move(done));
}

}  // namespace fencelock::storage
