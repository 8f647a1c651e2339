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
      resolver_(strand_),
      candidates_(options_.address),
      subscribe_timer_(strand_),
      reconnect_timer_(strand_),
      backoff_(options_.reconnect_min, options_.reconnect_max) {}

ReleaseSubscriber::~ReleaseSubscriber() {
  free_detached(context_);
}

void ReleaseSubscriber::start() {
  if (state_ == State::kIdle && context_ == nullptr) connect();
}

void ReleaseSubscriber::stop() {
  if (state_ == State::kStopped) return;
  state_ = State::kStopped;
  on_message_ = nullptr;
  subscribe_timer_.cancel();
  reconnect_timer_.cancel();
  resolver_.cancel();
  teardown();
}

void ReleaseSubscriber::connect() {
  if (const auto ip = candidates_.next()) {
    connect_to(*ip);
    return;
  }
  state_ = State::kResolving;
  resolver_.resolve(options_.address, options_.resolve_timeout,
                    [weak = weak_from_this()](Result<AddressResolver::Endpoints> resolved) {
                      if (const auto self = weak.lock()) self->on_resolved(std::move(resolved));
                    });
}

void ReleaseSubscriber::on_resolved(Result<AddressResolver::Endpoints> resolved) {
  if (state_ != State::kResolving) return;
  state_ = State::kIdle;
  if (!resolved) {  // the lock node itself reports it (RedisNode shares the name)
    candidates_.forget();
    schedule_reconnect();
    return;
  }
  candidates_.assign(resolved.value());
  connect();
}

void ReleaseSubscriber::connect_to(const std::string& ip) {
  redisAsyncContext* context = redisAsyncConnect(ip.c_str(), options_.address.port);
  if (context == nullptr) {
    connection_lost();
    return;
  }
  if (context->err != 0) {
    redisAsyncFree(context);
    connection_lost();
    return;
  }
  context->data = this;
  redisEnableKeepAlive(&context->c);  // this connection never writes after SUBSCRIBE
  HiredisAsioAdapter::attach(context, strand_);
  context_ = context;
  ++generation_;
  state_ = State::kSubscribing;
  redisAsyncSetConnectCallback(context, &ReleaseSubscriber::on_connected);
  redisAsyncSetDisconnectCallback(context, &ReleaseSubscriber::on_disconnected);
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
  if (was_subscribed || candidates_.exhausted()) candidates_.forget();  // look the name up again
  schedule_reconnect();
}

void ReleaseSubscriber::schedule_reconnect() {
  reconnect_timer_.expires_after(backoff_.next_delay());
  reconnect_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec == asio::error::operation_aborted || self->state_ != State::kIdle ||
        self->context_ != nullptr)
      return;
    self->connect();
  });
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
    self->backoff_.reset();
  } else if (kind == "message" && self->on_message_) {
    self->on_message_(element_text(reply, 2));
  }
}

}  // namespace fencelock::storage
