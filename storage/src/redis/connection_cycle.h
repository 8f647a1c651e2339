// How a connection to one node is made and made again — shared by RedisNode (commands) and
// ReleaseSubscriber (announcements). Every (re)connect resolves the configured address again (that
// is how a changed address is noticed; an IP literal skips the resolver) and hands hiredis only IP
// literals: hiredis 0.14 resolves names with a blocking getaddrinfo. A connection that fails
// before it was healthy tries the name's next address at once; after the last one, the name is
// resolved again after the backoff. A connection lost after it served for at least the longest
// backoff is replaced at once (a timeout under load must not cost a backoff); one lost sooner
// waits out the backoff, reset by healthy() — so a server that accepts and then drops every
// connection is dialled a few times a second, not in a loop.
//
// The owner keeps its connection and its state; the cycle tells it when to dial which address.
// Threading: every call, and every call back to the owner, runs on the owner's strand.
#pragma once

#include <hiredis/async.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "fencelock/storage/node_address.h"
#include "net/address_candidates.h"
#include "net/address_resolver.h"
#include "redis/reconnect_backoff.h"

namespace fencelock::storage {

class ConnectionCycle {
 public:
  class Owner {
   public:
    virtual ~Owner() = default;
    // Opens a connection to `ip` at the address's port (open_connection()).
    virtual void dial(const std::string& ip) = 0;
    // Whether a reconnect may start now: not connected, not connecting, not stopped.
    virtual bool may_dial() const = 0;
    // A resolution's outcome, for counters and reports; after a failure the backoff follows.
    virtual void on_unresolved(const std::string& /*why*/) {}
    virtual void on_resolved() {}
  };

  ConnectionCycle(const boost::asio::any_io_executor& strand, NodeAddress address,
                  std::chrono::milliseconds resolve_timeout,
                  std::chrono::milliseconds reconnect_min, std::chrono::milliseconds reconnect_max);

  // The owner, held weakly: a cycle whose owner is gone does nothing.
  void attach(std::weak_ptr<Owner> owner) { owner_ = std::move(owner); }
  // Dials the next address of the last resolution, or resolves the name again first.
  void connect();
  // The connection (or the attempt at one) is gone; `was_healthy`: it had been in use.
  void lost(bool was_healthy);
  // The connection is in use (handshake passed, subscription confirmed).
  void healthy();
  void stop();

 private:
  void reconnect(bool immediately);

  NodeAddress address_;
  std::chrono::milliseconds resolve_timeout_;
  std::chrono::milliseconds served_enough_;  // reconnect_max: lost after that, replaced at once
  std::chrono::steady_clock::time_point healthy_since_{};
  std::weak_ptr<Owner> owner_;
  AddressResolver resolver_;
  AddressCandidates candidates_;
  boost::asio::steady_timer reconnect_timer_;
  ReconnectBackoff backoff_;
  bool resolving_ = false;
  bool stopped_ = false;
};

// A hiredis connection to `ip`:`port` driven by `strand`, with `data` and the two callbacks set;
// nullptr with `why` set when hiredis could not even start it.
redisAsyncContext* open_connection(const std::string& ip, int port,
                                   const boost::asio::any_io_executor& strand, void* data,
                                   redisConnectCallback* on_connected,
                                   redisDisconnectCallback* on_disconnected, std::string& why);

}  // namespace fencelock::storage
