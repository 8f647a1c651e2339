#include "net/address_resolver.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <mutex>
#include <thread>

#include "fencelock/host_lookup.h"
#include "net/resolver_override.h"

namespace fencelock::storage {

namespace asio = boost::asio;

struct AddressResolver::State {
  explicit State(asio::any_io_executor strand)
      : executor(std::move(strand)), deadline_timer(executor), answer_timer(executor) {}

  asio::any_io_executor executor;
  asio::steady_timer deadline_timer;
  // Delays an overridden answer (tests). Like a running getaddrinfo it is never cancelled by a
  // deadline: its late answer meets the generation check.
  asio::steady_timer answer_timer;
  std::uint64_t generation = 0;  // of the lookup in flight; bumped to drop its answer
  Handler handler;

  // Hands `answer` to the handler if lookup `of` is still the current one.
  void finish(std::uint64_t of, Result<Endpoints> answer) {
    if (of != generation || !handler) return;
    ++generation;
    deadline_timer.cancel();
    Handler done = std::move(handler);
    handler = nullptr;
    done(std::move(answer));
  }
};

// Shared by the resolver and the threads of its lookups. A lookup's thread holds only this — never
// the State, whose timers must die on the strand — and posts its answer while the channel is open;
// the resolver's destructor closes it (and drops the executor, which must not outlive its
// io_context), so a lookup that outlives the resolver answers nobody.
struct AddressResolver::Channel {
  std::mutex mutex;
  asio::any_io_executor executor;  // empty once closed
  std::weak_ptr<State> state;

  void answer(std::uint64_t generation, Result<Endpoints> endpoints) {
    const std::lock_guard<std::mutex> lock(mutex);
    if (!executor) return;
    asio::post(executor, [state = state, generation, endpoints = std::move(endpoints)]() mutable {
      if (const auto alive = state.lock()) alive->finish(generation, std::move(endpoints));
    });
  }

  void close() {
    const std::lock_guard<std::mutex> lock(mutex);
    executor = asio::any_io_executor();
  }
};

namespace {

Error unavailable(std::string message) {
  return make_error(ErrorCode::kUnavailable, std::move(message));
}

Result<AddressResolver::Endpoints> endpoints_of(const std::string& host,
                                                const std::vector<std::string>& addresses,
                                                std::uint16_t port) {
  AddressResolver::Endpoints endpoints;
  for (const std::string& text : addresses) {
    boost::system::error_code ec;
    const auto ip = asio::ip::make_address(text, ec);
    if (!ec) endpoints.emplace_back(ip, port);
  }
  if (endpoints.empty()) return unavailable(host + " has no address");
  return endpoints;
}

}  // namespace

AddressResolver::AddressResolver(asio::any_io_executor strand)
    : state_(std::make_shared<State>(strand)), channel_(std::make_shared<Channel>()) {
  channel_->executor = std::move(strand);
  channel_->state = state_;
}

AddressResolver::~AddressResolver() {
  channel_->close();  // a lookup still running answers nobody
  ++state_->generation;
  state_->handler = nullptr;
  try {
    cancel();
  } catch (...) {  // a destructor never throws; the late answer meets the generation check
  }
}

void AddressResolver::cancel() {
  ++state_->generation;
  state_->handler = nullptr;
  state_->deadline_timer.cancel();
}

void AddressResolver::resolve(const NodeAddress& address, std::chrono::milliseconds deadline,
                              Handler handler) {
  cancel();
  const std::uint64_t generation = ++state_->generation;
  state_->handler = std::move(handler);
  const std::string host = address.host;
  const std::uint16_t port = address.port;
  if (address.is_literal()) {
    asio::post(state_->executor, [state = state_, generation, host, port] {
      state->finish(generation, endpoints_of(host, {host}, port));
    });
    return;
  }
  state_->deadline_timer.expires_after(deadline);
  state_->deadline_timer.async_wait(
      [state = state_, generation, host, deadline](const boost::system::error_code& ec) {
        if (ec == asio::error::operation_aborted) return;
        state->finish(generation, unavailable("resolving " + host + " took longer than " +
                                              std::to_string(deadline.count()) + " ms"));
      });
  if (auto answer = overridden_answer(host)) {
    state_->answer_timer.expires_after(answer->delay);
    state_->answer_timer.async_wait([state = state_, generation, host, port,
                                     answer =
                                         std::move(*answer)](const boost::system::error_code& ec) {
      if (ec == asio::error::operation_aborted) return;
      if (!answer.failure.empty()) {
        state->finish(generation, unavailable("cannot resolve " + host + ": " + answer.failure));
      } else {
        state->finish(generation, endpoints_of(host, answer.addresses, port));
      }
    });
    return;
  }
  try {
    std::thread([channel = channel_, generation, host, port] {
      auto found = lookup_host(host);
      if (!found) {
        channel->answer(generation, unavailable("cannot resolve " + host + ": " + found.error()));
      } else {
        channel->answer(generation, endpoints_of(host, found.value(), port));
      }
    }).detach();
  } catch (const std::system_error& e) {
    asio::post(state_->executor, [state = state_, generation, host, what = std::string(e.what())] {
      state->finish(generation, unavailable("cannot resolve " + host + ": no thread: " + what));
    });
  }
}

}  // namespace fencelock::storage
