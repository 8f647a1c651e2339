#include "net/address_resolver.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "net/resolver_override.h"

namespace fencelock::storage {

namespace asio = boost::asio;
using asio::ip::tcp;

struct AddressResolver::State {
  explicit State(asio::any_io_executor strand)
      : executor(std::move(strand)),
        resolver(executor),
        deadline_timer(executor),
        answer_timer(executor) {}

  asio::any_io_executor executor;
  tcp::resolver resolver;
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
    : state_(std::make_shared<State>(std::move(strand))) {}

AddressResolver::~AddressResolver() {
  ++state_->generation;  // a lookup still running answers nobody
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
  state_->resolver.cancel();
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
  state_->resolver.async_resolve(
      host, std::to_string(port), tcp::resolver::numeric_service,
      [state = state_, generation, host](const boost::system::error_code& ec,
                                         const tcp::resolver::results_type& results) {
        if (ec == asio::error::operation_aborted) return;
        if (ec) {
          state->finish(generation, unavailable("cannot resolve " + host + ": " + ec.message()));
          return;
        }
        Endpoints endpoints;
        for (const auto& entry : results) endpoints.push_back(entry.endpoint());
        if (endpoints.empty()) {
          state->finish(generation, unavailable(host + " has no address"));
          return;
        }
        state->finish(generation, std::move(endpoints));
      });
}

}  // namespace fencelock::storage
