// A revoke's own steps (lua_revoke_scripts.h): the cleanup that puts back what a failed revoke
// overwrote, and the settling of a granted one.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

#include "engine/acquire_operation.h"
#include "engine/engine_core.h"
#include "fencelock/storage/lease_secret.h"

namespace fencelock::storage {

std::string revoke_saved_name(std::string_view name, std::string_view lease_id,
                              std::string_view token) {
  return std::string(name).append("#revoked:").append(lease_id).append(":").append(token);
}

std::string AcquireOperation::revoke_saved_key() const {
  return core_->key_of(revoke_saved_name(name(), value_.substr(0, kLeaseIdLength), token_arg(0)));
}

void AcquireOperation::undo_revoke() {
  const std::string keys[] = {keys_.front(), revoke_saved_key()};
  core_->release_everywhere(keys, value_, Script::kUndoRevoke);
}

void AcquireOperation::settle_revoke() {
  // Node expiry stays at or after attempt start + ttl: past the deadline the holder is told.
  const auto spent = std::chrono::ceil<std::chrono::milliseconds>(Clock::now() - attempt_started_);
  const auto left = std::max<std::int64_t>((target_.ttl - spent).count(), 1);
  const std::string keys[] = {keys_.front(), revoke_saved_key()};
  const std::string args[] = {value_, std::to_string(left)};
  core_->broadcast(EngineCore::script_command(Script::kSettleRevoke, true, keys, args), nullptr, 0);
}

}  // namespace fencelock::storage
