// A read/write lock's grant (lua_rw_scripts.h): the grant's own lease key, the lock's state key
// (whose name is the queue its waiters join) and the writer-waiting key, by which a writer that
// would wait keeps new readers out. Its extend and release claim the lease key.
#include <algorithm>

#include "engine/acquire_shape.h"
#include "fencelock/storage/lease_secret.h"

namespace fencelock::storage {

std::string rw_state_name(std::string_view name) {
  return std::string(name) + "#rw";
}

std::string rw_lease_name(std::string_view name, std::string_view lease_id) {
  return rw_state_name(name).append(":").append(lease_id);
}

std::string rw_writer_name(std::string_view name) {
  return rw_state_name(name) + "-writer";
}

ClaimTarget rw_claim(const EngineCore& core, Script script, const std::string& name, RwMode mode,
                     const LeaseClaim& claim) {
  ClaimTarget target;
  target.script = script;
  target.names.push_back(rw_state_name(name));
  const std::string_view lease_id = std::string_view(claim.proof).substr(0, kLeaseIdLength);
  target.keys.push_back(core.key_of(rw_lease_name(name, lease_id)));
  target.keys.push_back(core.key_of(target.names.front()));
  target.claim = claim.proof + rw_claim_text(claim.token, mode, claim.owner);
  target.owned = !claim.owner.empty();
  return target;
}

namespace {

class RwShape final : public AnsweringShape<Lease> {
 public:
  RwShape(const EngineCore& core, const std::string& name, RwMode mode, std::string_view lease_id,
          RedlockEngine::AcquireHandler done)
      : AnsweringShape(std::move(done)),
        mode_(mode),
        queues_{rw_state_name(name)},
        keys_{core.key_of(rw_lease_name(name, lease_id)), core.key_of(queues_.front()),
              core.key_of(rw_writer_name(name))} {}

  const std::vector<std::string>& queues() const override { return queues_; }

  void begin_attempt(bool marking) override {
    took_writer_key_ = took_writer_key_ || (mode_ == RwMode::kWrite && marking);
  }

  RespCommand command(const EngineCore& /*core*/, const AttemptFacts& attempt,
                      bool eval) const override {
    std::vector<std::string> args = attempt_args(attempt);
    args.push_back(attempt.tokens.front());
    args.emplace_back(mode_ == RwMode::kWrite ? "w" : "r");
    args.push_back(writer_waiting_arg(attempt));
    return EngineCore::script_command(Script::kAcquireRw, eval, attempt_keys(keys_, attempt), args);
  }

  Vote read_vote(const NodeReply& reply, NodeAnswer& answer) override {
    return read_acquire_reply(reply, answer);
  }

  std::string held_message() const override {
    return mode_ == RwMode::kRead ? "the read/write lock is held by a writer, or one waits"
                                  : "the read/write lock is held";
  }

  // Its own lease key; the state key's entry goes with it.
  void clean_up(EngineCore& core, const AttemptFacts& attempt) const override {
    core.release_everywhere(std::span<const std::string>(keys_.data(), 1), attempt.value);
  }

  bool shared_grant() const override { return mode_ == RwMode::kRead; }

  void grant(EngineCore& core, const AttemptFacts& attempt, GrantFacts grant) override {
    Lease lease = lock_lease(attempt, grant);
    lease.proof =
        lease_proof_of_text(attempt.value, rw_claim_text(grant.tokens.front(), mode_, grant.owner));
    answer(core, std::move(lease));
  }

  // Granted or not, it waits no more: readers may follow it (after its release, if granted). On
  // each node this follows its last attempt, which may have taken the key.
  void finished(EngineCore& core, const AttemptFacts& attempt) override {
    if (!std::exchange(took_writer_key_, false)) return;
    core.release_everywhere(std::span<const std::string>(&keys_[2], 1),
                            attempt.value.substr(0, kLeaseIdLength));
  }

 private:
  // A writer that would wait keeps new readers out this long from this attempt (ms), or "0".
  std::string writer_waiting_arg(const AttemptFacts& attempt) const {
    if (mode_ != RwMode::kWrite || attempt.mark.empty()) return "0";
    // Renewed by each attempt; a writer that went away keeps readers out for at most this long.
    constexpr std::chrono::milliseconds kLongestWriterWait{3000};
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(
        attempt.wait_ends - std::chrono::steady_clock::now());
    const auto hold = std::min(left, std::max(attempt.ttl, kLongestWriterWait));
    return std::to_string(std::max<std::int64_t>(hold.count(), 1));
  }

  RwMode mode_;
  std::vector<std::string> queues_;
  std::vector<std::string> keys_;  // the lease key, the state key, the writer-waiting key
  bool took_writer_key_ = false;   // an attempt may have taken it: finished() gives it back
};

}  // namespace

std::unique_ptr<AcquireShape> rw_shape(const EngineCore& core, const std::string& name, RwMode mode,
                                       std::string_view lease_id,
                                       RedlockEngine::AcquireHandler done) {
  return std::make_unique<RwShape>(core, name, mode, lease_id, std::move(done));
}

}  // namespace fencelock::storage
