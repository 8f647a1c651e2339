// Resolves a lock node's (or a token source's) address to IP endpoints without blocking the
// event loop, for connections that re-resolve their name on every (re)connect.
//
// Each lookup runs getaddrinfo on a thread of its own. Not Asio's resolver: it runs every lookup
// of an io_context on one thread, one after the other, so one name whose DNS never answers made
// every other name of the process wait behind it (past its deadline: a quorum of healthy nodes
// took minutes to form), and destroying the io_context waited for a running lookup (a SIGTERM
// that took as long as resolv.conf's timeouts). A running getaddrinfo cannot be interrupted, so
// the deadline is ours: when it passes, the handler is answered at once and the lookup's late
// completion is dropped — a generation counter tells it from the current one — never trusted.
// A lookup that outlives its resolver answers nobody and touches nothing of it. An IP literal is
// answered without any lookup (posted, never inline).
//
// Threading: construct, call and destroy on the strand given at construction, and before its
// io_context is destroyed; the handler runs on it.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "fencelock/storage/node_address.h"
#include "fencelock/storage/result.h"

namespace fencelock::storage {

class AddressResolver {
 public:
  using Endpoints = std::vector<boost::asio::ip::tcp::endpoint>;  // in getaddrinfo's order
  using Handler = std::function<void(Result<Endpoints>)>;

  explicit AddressResolver(boost::asio::any_io_executor strand);
  ~AddressResolver();  // cancel()
  AddressResolver(const AddressResolver&) = delete;
  AddressResolver& operator=(const AddressResolver&) = delete;

  // Resolves `address` (its port in every endpoint). `handler` gets exactly one answer, never
  // from inside this call — unless cancel(), another resolve() or the destructor comes first:
  // then it is never called. Errors: kUnavailable, naming the host: "cannot resolve redis1: Host
  // not found (authoritative)", "resolving redis1 took longer than 5000 ms", "redis1 has no
  // address".
  void resolve(const NodeAddress& address, std::chrono::milliseconds deadline, Handler handler);

  // Drops the lookup in flight, if any: its handler is never called.
  void cancel();

 private:
  struct State;
  struct Channel;
  std::shared_ptr<State> state_;
  std::shared_ptr<Channel> channel_;  // what a lookup's thread answers through
};

}  // namespace fencelock::storage
