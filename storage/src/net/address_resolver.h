// Resolves a lock node's (or a token source's) address to IP endpoints without blocking the
// event loop, for connections that re-resolve their name on every (re)connect.
//
// Asio's resolver runs getaddrinfo on one private thread per io_context: the loop never blocks,
// but the lookups of one io_context are serialized and a running lookup cannot be interrupted
// (cancel() only drops lookups not started yet). So the deadline is ours: when it passes, the
// handler is answered at once and the lookup's late completion is dropped — a generation counter
// tells it from the current one — never trusted. An IP literal is answered without any lookup
// (posted, never inline), so numeric configurations never touch the resolver thread.
//
// Threading: construct, call and destroy on the strand given at construction; the handler runs
// on it.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "fencelock/storage/engine_options.h"
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
  std::shared_ptr<State> state_;
};

}  // namespace fencelock::storage
