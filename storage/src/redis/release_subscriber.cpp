#include "redis/release_subscriber.h"

#include <hiredis/hiredis.h>

#include <string_view>

#include "redis/hiredis_asio_adapter.h"

namespace fencelock::storage {

namespace asio = boost::asio;

namespace {

std::string_view element_text(const redisReply* reply, std::size_t i) {
  if (reply->type != REDIS_REPLY_ARRAY || i >= reply->elements) return {};
  const redisReply* element = reply->element[i];
  if (element->type != REDIS_REPLY_STRING || element->str == nullptr) return {};
  return {element->str, element->len};
}

}  // namespace

ReleaseSubscriber::ReleaseSubscriber(asio::any_io_executor strand, ReleaseSubscriberOptions options,
                                     MessageHandler on_message)
    : strand_(std::move(strand)),
      options_(std::move(options)),
      on_message_(std::move(on_message)),
      cycle_(strand_, options_.address, options_.resolve_timeout, options_.reconnect_min,
             options_.reconnect_max),
      subscribe_timer_(strand_) {}

ReleaseSubscriber::~ReleaseSubscriber() {
  free_detached(context_);
}

void ReleaseSubscriber::start() {
  if (!may_dial()) return;
  cycle_.attach(weak_from_this());
  cycle_.connect();
}

void ReleaseSubscriber::stop() {
  if (state_ == State::kStopped) return;
  state_ = State::kStopped;
  on_message_ = nullptr;
  subscribe_timer_.cancel();
  cycle_.stop();
  teardown();
}

void ReleaseSubscriber::dial(const std::string& ip) {
  std::string why;  // not reported: the lock node's own connection says why
  redisAsyncContext* context =
      open_connection(ip, options_.address.port, strand_, this, &ReleaseSubscriber::on_connected,
                      &ReleaseSubscriber::on_disconnected, why);
  if (context == nullptr) {
    connection_lost();
    return;
  }
  redisEnableKeepAlive(&context->c);  // this connection never writes after SUBSCRIBE
  context_ = context;
  ++generation_;
  state_ = State::kSubscribing;
  // AUTH first, its answer unread: if it is refused, SUBSCRIBE is refused too and the subscribe
  // timer gives the connection up (and retries with backoff).
  const RedisCredentials& auth = options_.credentials;
  if (!auth.empty()) {
    const int sent =
        auth.username.empty()
            ? redisAsyncCommand(context, nullptr, nullptr, "AUTH %b", auth.password.data(),
                                auth.password.size())
            : redisAsyncCommand(context, nullptr, nullptr, "AUTH %b %b", auth.username.data(),
                                auth.username.size(), auth.password.data(), auth.password.size());
    if (sent != REDIS_OK) {
      teardown();
      return;
    }
  }
  if (redisAsyncCommand(context, &ReleaseSubscriber::on_channel_reply, nullptr, "SUBSCRIBE %b",
                        options_.channel.data(), options_.channel.size()) != REDIS_OK) {
    teardown();
    return;
  }
  // hiredis has no timeouts: a connect or SUBSCRIBE that hangs is ours to give up on.
  subscribe_timer_.expires_after(options_.subscribe_timeout);
  subscribe_timer_.async_wait(
      [self = shared_from_this(), generation = generation_](const boost::system::error_code& ec) {
        if (ec == asio::error::operation_aborted || self->generation_ != generation ||
            self->state_ != State::kSubscribing) {
          return;
        }
        self->teardown();
      });
}

void ReleaseSubscriber::teardown() {
  free_detached(context_);  // the NULL replies hiredis hands the channel callback are not news
  connection_lost();
}

void ReleaseSubscriber::connection_lost() {
  subscribe_timer_.cancel();
  if (state_ == State::kStopped) return;
  const bool was_subscribed = state_ == State::kSubscribed;
  state_ = State::kIdle;
  cycle_.lost(/*was_healthy=*/was_subscribed);
}

void ReleaseSubscriber::on_connected(const redisAsyncContext* context, int status) {
  auto* self = static_cast<ReleaseSubscriber*>(context->data);
  if (self == nullptr || status == REDIS_OK || self->context_ != context) return;
  // hiredis frees the context right after this callback.
  self->context_ = nullptr;
  self->connection_lost();
}

void ReleaseSubscriber::on_disconnected(const redisAsyncContext* context, int /*status*/) {
  auto* self = static_cast<ReleaseSubscriber*>(context->data);
  if (self == nullptr || self->context_ != context) return;  // our own teardown: handled there
  self->context_ = nullptr;
  self->connection_lost();
}

void ReleaseSubscriber::on_channel_reply(redisAsyncContext* context, void* raw_reply,
                                         void* /*privdata*/) {
  auto* self = static_cast<ReleaseSubscriber*>(context->data);
  if (self == nullptr || raw_reply == nullptr || self->context_ != context) return;
  const auto* reply = static_cast<const redisReply*>(raw_reply);
  const std::string_view kind = element_text(reply, 0);
  if (kind == "subscribe") {
    self->state_ = State::kSubscribed;
    self->subscribe_timer_.cancel();
    self->cycle_.healthy();
  } else if (kind == "message" && self->on_message_) {
    self->on_message_(element_text(reply, 2));
  }
}

}  // namespace fencelock::storage
