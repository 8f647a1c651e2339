// A token drawn without a lock (LockEngine::draw_token, POST /v1/tokens): drawn from the token
// source, then raised into the name's fence on a majority of the lock nodes (kFenceTokenScript)
// before it is answered — so it is ordered with every grant's token as grants are with each other
// (docs/architecture.md, "The fence"). A token not above the fence on enough nodes is handled as
// an acquire's (acquire_operation.h): the source skips past the fence and a new token is drawn;
// three fresh tokens in a row still behind a fence seen before answer kUnavailable (the token
// store is behind the lock nodes), races retry (at most 32 in a row): FenceRetries. The registry's
// verdict is checked before the draw and again before the answer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/engine_core.h"
#include "engine/fences.h"
#include "fencelock/storage/quorum.h"

namespace fencelock::storage {

class TokenDrawOperation : public ReplySink,
                           public std::enable_shared_from_this<TokenDrawOperation> {
 public:
  using Handler = std::function<void(Result<std::uint64_t>)>;

  TokenDrawOperation(std::shared_ptr<EngineCore> core, std::string name, Handler done);
  void start();  // on the strand

 private:
  void draw();
  void on_token(std::uint32_t attempt, Result<std::uint64_t> token);
  void on_reply(std::size_t node, std::uint32_t cookie, NodeReply reply) override;
  RespCommand command(bool eval) const;
  void fenced();  // the attempt failed on fences: skip past them and draw again, or give up
  void complete(Result<std::uint64_t> answer);

  std::shared_ptr<EngineCore> core_;
  std::string name_;
  std::string fence_key_;
  Handler done_;
  std::uint32_t attempt_ = 0;  // the reply cookie: stragglers of an earlier attempt are ignored
  std::uint64_t token_ = 0;
  std::uint64_t token_floor_ = 0;  // InstanceRegistry::token_floor, before the draw
  std::optional<QuorumTally> tally_;
  std::uint64_t fence_ = 0;  // the highest fence that refused this attempt
  FenceRetries fence_retries_;
  bool done_called_ = false;
};

}  // namespace fencelock::storage
