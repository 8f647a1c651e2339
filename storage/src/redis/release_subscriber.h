// Hears release announcements from one Redis node: a dedicated hiredis connection in subscribe
// mode on one channel (a connection in subscribe mode can run no other command, so it cannot share
// RedisNode's). Every message on the channel is handed to the handler.
//
// Announcements only speed up hand-off between fencelockd instances; nothing depends on hearing
// them (a waiter that hears nothing still retries on its timer). So the subscriber is simple: it
// connects as the lock node's connection does (connection_cycle.h), subscribes, and on any loss
// connects again. Its only deadline is the one on
// connecting and subscribing; TCP keepalive finds a peer that vanished without a reset. It cannot
// tell a paused node from a quiet one (hiredis 0.14 cannot PING in subscribe mode); the other
// nodes of the quorum announce the same releases meanwhile.
//
// Threading: every member function and every handler call runs on the strand given at
// construction.
#pragma once

#include <hiredis/async.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fencelock/storage/node_address.h"
#include "redis/connection_cycle.h"

namespace fencelock::storage {

struct ReleaseSubscriberOptions {
  NodeAddress address;                              // resolved at every (re)connect
  std::chrono::milliseconds resolve_timeout{5000};  // of one resolution
  std::string channel;
  RedisCredentials credentials;                      // AUTH before SUBSCRIBE when not empty
  std::chrono::milliseconds subscribe_timeout{300};  // connect + SUBSCRIBE confirmed
  std::chrono::milliseconds reconnect_min{50};
  std::chrono::milliseconds reconnect_max{2000};
};

class ReleaseSubscriber : public ConnectionCycle::Owner,
                          public std::enable_shared_from_this<ReleaseSubscriber> {
 public:
  using MessageHandler = std::function<void(std::string_view message)>;

  ReleaseSubscriber(boost::asio::any_io_executor strand, ReleaseSubscriberOptions options,
                    MessageHandler on_message);
  ~ReleaseSubscriber() override;
  ReleaseSubscriber(const ReleaseSubscriber&) = delete;
  ReleaseSubscriber& operator=(const ReleaseSubscriber&) = delete;

  void start();  // begins connecting in the background
  void stop();   // closes the connection for good; the handler is never called again

  bool subscribed() const noexcept { return state_ == State::kSubscribed; }

 private:
  enum class State { kIdle, kSubscribing, kSubscribed, kStopped };

  // ConnectionCycle::Owner
  void dial(const std::string& ip) override;  // then AUTH and SUBSCRIBE
  bool may_dial() const override { return state_ == State::kIdle && context_ == nullptr; }
  void teardown();  // drop the connection (ours), reconnect later
  void connection_lost();

  static void on_connected(const redisAsyncContext* context, int status);
  static void on_disconnected(const redisAsyncContext* context, int status);
  static void on_channel_reply(redisAsyncContext* context, void* reply, void* privdata);

  boost::asio::any_io_executor strand_;
  ReleaseSubscriberOptions options_;
  MessageHandler on_message_;
  ConnectionCycle cycle_;
  State state_ = State::kIdle;
  redisAsyncContext* context_ = nullptr;
  std::uint64_t generation_ = 0;  // of context_: a timer armed for an older one does nothing
  boost::asio::steady_timer subscribe_timer_;
};

}  // namespace fencelock::storage
