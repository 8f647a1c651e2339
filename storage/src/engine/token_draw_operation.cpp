#include "engine/token_draw_operation.h"

#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <utility>

#include "engine/fences.h"
#include "engine/lua_scripts.h"

namespace fencelock::storage {

namespace asio = boost::asio;

TokenDrawOperation::TokenDrawOperation(std::shared_ptr<EngineCore> core, std::string name,
                                       Handler done)
    : core_(std::move(core)),
      name_(std::move(name)),
      fence_key_(core_->key_of(fence_name(name_))),
      done_(std::move(done)) {}

void TokenDrawOperation::start() {
  core_->operation_started();
  draw();
}

void TokenDrawOperation::draw() {
  if (core_->stopped()) {
    complete(make_error(ErrorCode::kUnavailable, "the engine is stopping"));
    return;
  }
  if (auto refusal = core_->grant_refusal()) {
    complete(core_->refusal_error(std::move(*refusal)));
    return;
  }
  TokenSource* tokens = core_->tokens();
  if (tokens == nullptr) {
    complete(make_error(ErrorCode::kUnavailable, "no token source"));
    return;
  }
  ++attempt_;
  token_floor_ = core_->token_floor();
  tokens->next(name_, [self = shared_from_this(), attempt = attempt_](Result<std::uint64_t> token) {
    asio::dispatch(self->core_->strand(), [self, attempt, token = std::move(token)]() mutable {
      self->on_token(attempt, std::move(token));
    });
  });
}

void TokenDrawOperation::on_token(std::uint32_t attempt, Result<std::uint64_t> token) {
  if (attempt != attempt_ || done_called_) return;
  if (!token.ok()) {
    complete(make_error(ErrorCode::kUnavailable, "fencing token: " + token.error().message));
    return;
  }
  token_ = token.value();
  if (auto refusal = core_->token_refusal(token_, token_floor_)) {
    complete(make_error(ErrorCode::kUnavailable, std::move(*refusal)));
    return;
  }
  tally_.emplace(core_->new_tally());
  fence_ = 0;
  core_->broadcast(command(/*eval=*/false), shared_from_this(), attempt_);
  if (tally_->outcome() == TallyOutcome::kImpossible) {
    complete(core_->shortfall_error(*tally_));
  }
}

RespCommand TokenDrawOperation::command(bool eval) const {
  const std::string keys[] = {fence_key_};
  const std::string args[] = {std::to_string(token_)};
  return EngineCore::script_command(Script::kFenceToken, eval, keys, args);
}

void TokenDrawOperation::on_reply(std::size_t node, std::uint32_t cookie, NodeReply reply) {
  if (cookie != attempt_ || done_called_ || !tally_) return;
  if (tally_->outcome() != TallyOutcome::kUndecided) return;  // decided: a straggler
  if (core_->resend_on_noscript(
          node, reply, [this] { return command(/*eval=*/true); }, shared_from_this(), attempt_)) {
    return;
  }
  Vote vote = Vote::kFailed;
  if (reply.is_integer(1)) {
    vote = Vote::kYes;
  } else if (const auto refused = fence_refusal(reply)) {
    fence_ = std::max(fence_, refused->second);
    vote = Vote::kNo;
  }
  tally_->record(node, vote);
  switch (tally_->outcome()) {
    case TallyOutcome::kUndecided:
      return;
    case TallyOutcome::kReached:
      // The registry's verdict may have changed while the fence was being raised.
      if (auto refusal = core_->token_refusal(token_, token_floor_)) {
        complete(make_error(ErrorCode::kUnavailable, std::move(*refusal)));
      } else {
        complete(token_);
      }
      return;
    case TallyOutcome::kImpossible:
      break;
  }
  if (fence_ != 0 && !tally_->unavailable()) {
    fenced();
  } else {
    complete(core_->shortfall_error(*tally_));
  }
}

void TokenDrawOperation::fenced() {
  core_->tokens()->skip_past(name_, fence_);
  if (fence_retries_.retry_after(std::span(&token_, 1), std::span(&fence_, 1)) &&
      !core_->stopped()) {
    // Posted: never from inside a hiredis callback.
    asio::post(core_->strand(), [self = shared_from_this()] { self->draw(); });
    return;
  }
  complete(make_error(ErrorCode::kUnavailable,
                      "the token store is behind the lock nodes: token " + std::to_string(token_) +
                          " for \"" + name_ + "\" is not above " + std::to_string(fence_) +
                          ", which the nodes have seen granted (a copied, restored, wiped or new "
                          "token store?)"));
}

void TokenDrawOperation::complete(Result<std::uint64_t> answer) {
  if (done_called_) return;
  done_called_ = true;
  core_->complete_later(std::move(done_), std::move(answer));
  core_->operation_finished();
}

}  // namespace fencelock::storage
