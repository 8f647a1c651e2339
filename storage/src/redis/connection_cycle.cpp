#include "redis/connection_cycle.h"

#include "redis/hiredis_asio_adapter.h"

namespace fencelock::storage {

namespace asio = boost::asio;

ConnectionCycle::ConnectionCycle(const asio::any_io_executor& strand, NodeAddress address,
                                 std::chrono::milliseconds resolve_timeout,
                                 std::chrono::milliseconds reconnect_min,
                                 std::chrono::milliseconds reconnect_max)
    : address_(std::move(address)),
      resolve_timeout_(resolve_timeout),
      served_enough_(reconnect_max),
      resolver_(strand),
      candidates_(address_),
      reconnect_timer_(strand),
      backoff_(reconnect_min, reconnect_max) {}

void ConnectionCycle::connect() {
  const auto owner = owner_.lock();
  if (stopped_ || owner == nullptr) return;
  if (const auto ip = candidates_.next()) {
    owner->dial(*ip);
    return;
  }
  resolving_ = true;
  resolver_.resolve(address_, resolve_timeout_,
                    [this, weak = owner_](Result<AddressResolver::Endpoints> resolved) {
                      const auto alive = weak.lock();  // the cycle is a member of its owner
                      if (alive == nullptr || stopped_ || !resolving_) return;
                      resolving_ = false;
                      if (!resolved) {
                        alive->on_unresolved(resolved.error().message);
                        candidates_.forget();
                        reconnect(/*immediately=*/false);
                        return;
                      }
                      alive->on_resolved();
                      candidates_.assign(resolved.value());
                      connect();
                    });
}

void ConnectionCycle::lost(bool was_healthy) {
  if (stopped_) return;
  if (!was_healthy && !candidates_.exhausted()) {
    reconnect(/*immediately=*/true);  // the name's next address
    return;
  }
  candidates_.forget();  // whatever comes next resolves the name again
  reconnect(/*immediately=*/was_healthy &&
            std::chrono::steady_clock::now() - healthy_since_ >= served_enough_);
}

void ConnectionCycle::healthy() {
  backoff_.reset();
  healthy_since_ = std::chrono::steady_clock::now();
}

void ConnectionCycle::reconnect(bool immediately) {
  if (stopped_) return;
  reconnect_timer_.expires_after(immediately ? std::chrono::milliseconds(0)
                                             : backoff_.next_delay());
  reconnect_timer_.async_wait([this, weak = owner_](const boost::system::error_code& ec) {
    if (ec == asio::error::operation_aborted) return;
    const auto alive = weak.lock();  // the cycle is a member of its owner
    if (alive == nullptr || stopped_ || resolving_ || !alive->may_dial()) return;
    connect();
  });
}

void ConnectionCycle::stop() {
  stopped_ = true;
  resolving_ = false;
  reconnect_timer_.cancel();
  resolver_.cancel();
}

redisAsyncContext* open_connection(const std::string& ip, int port,
                                   const asio::any_io_executor& strand, void* data,
                                   redisConnectCallback* on_connected,
                                   redisDisconnectCallback* on_disconnected, std::string& why) {
  redisAsyncContext* context = redisAsyncConnect(ip.c_str(), port);
  if (context == nullptr) {
    why = "out of memory";
    return nullptr;
  }
  if (context->err != 0) {
    why = context->errstr;
    redisAsyncFree(context);
    return nullptr;
  }
  context->data = data;
  HiredisAsioAdapter::attach(context, strand);
  redisAsyncSetConnectCallback(context, on_connected);
  redisAsyncSetDisconnectCallback(context, on_disconnected);
  return context;
}

}  // namespace fencelock::storage
