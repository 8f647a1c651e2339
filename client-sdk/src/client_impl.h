// Client::Impl, what every Client call goes through: the endpoints, a pool of keep-alive
// connections per endpoint, and call(), one request with its retries. With it, the helpers the
// files of Client's calls share (client.cpp, client_listings.cpp). Private to the SDK.
#pragma once

#include <algorithm>
#include <atomic>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "fencelock/client.h"
#include "fencelock/host_port.h"
#include "http_connection.h"

namespace fencelock {

struct Endpoint {
  HostPort address;
  bool tls = false;
  std::string tls_name;  // https: the URL's host without a trailing dot: what the certificate names
};

// An SDK error; `status` is the HTTP status that carried it, 0 when none did.
Error make(ErrorCode code, std::string message, unsigned status = 0);

// The service's error body → an SDK error.
Error error_from_reply(const HttpReply& reply);

// A call whose success is 200 with a JSON object: the object, or the service's error.
Result<nlohmann::json> expect_object(Result<HttpReply> reply);

// A semaphore's status as GET /v1/semaphores/{name} answers it — also an entry of GET
// /v1/semaphores — or kInternal when `body` is not one.
Result<SemaphoreStatus> semaphore_status_of(const nlohmann::json& body);

// A read/write lock's status as GET /v1/rwlocks/{name} answers it — also an entry of GET
// /v1/rwlocks — or kInternal when `body` is not one.
Result<RwLockStatus> rwlock_status_of(const nlohmann::json& body);

class Client::Impl {
 public:
  using Clock = std::chrono::steady_clock;
  using milliseconds = std::chrono::milliseconds;

  // kOnlyIfUndelivered: sent again only if it never reached the service; kRepeatable: also when
  // it may have (an acquire with a request id: the service answers the same grant again), but
  // not on a 503; kSafe: also on a 503.
  enum class Retry { kOnlyIfUndelivered, kRepeatable, kSafe };

  Impl(ClientOptions options, std::vector<Endpoint> endpoints,
       std::shared_ptr<boost::asio::ssl::context> tls)
      : options_(std::move(options)), endpoints_(std::move(endpoints)), tls_(std::move(tls)) {
    for (std::size_t i = 0; i < endpoints_.size(); ++i) pools_.push_back(std::make_unique<Pool>());
  }

  // One call with retries. `extra` lengthens each attempt (an acquire's wait). `within` bounds
  // the whole call. `sent_at` gets the send time of the attempt that answered.
  Result<HttpReply> call(std::string_view method, const std::string& target,
                         const std::string& body, Retry retry, milliseconds extra,
                         std::optional<milliseconds> within, Clock::time_point& sent_at) {
    const auto started = Clock::now();
    const Clock::time_point overall = within ? started + *within : Clock::time_point::max();
    milliseconds backoff = options_.retry_backoff;
    std::optional<Error> last;
    std::optional<Error> tls;  // the first TLS failure: what the caller must hear about
    for (int attempt = 0; attempt <= options_.max_retries; ++attempt) {
      const std::size_t e =
          (preferred_.load() + static_cast<std::size_t>(attempt)) % endpoints_.size();
      auto connection = take(e);
      sent_at = Clock::now();
      auto deadline = sent_at + options_.request_timeout + extra;
      deadline = std::min(deadline, overall);
      bool maybe_delivered = false;
      auto reply = connection->round_trip(method, target, body,
                                          std::min(sent_at + options_.connect_timeout, overall),
                                          deadline, maybe_delivered);
      if (reply.ok()) {
        give_back(e, std::move(connection));
        preferred_ = e;
        const bool retryable_status = reply->status == 503 && retry == Retry::kSafe;
        if (!retryable_status) return reply;
        last = error_from_reply(reply.value());
      } else {
        last = std::move(reply).error();
        if (maybe_delivered && retry == Retry::kOnlyIfUndelivered) return *last;
        if (last->code == ErrorCode::kTls) {
          if (!tls) tls = last;
          // Retrying cannot mend a certificate: only another endpoint may do better.
          if (endpoints_.size() == 1) break;
        }
      }
      if (attempt == options_.max_retries) break;
      if (within && Clock::now() + backoff >= overall) break;
      std::this_thread::sleep_for(backoff);
      backoff *= 2;
    }
    // A later attempt that could not connect at all must not hide a certificate problem.
    if (tls && last->code == ErrorCode::kTransport) return *tls;
    return *last;
  }

  const ClientOptions& options() const noexcept { return options_; }

 private:
  struct Pool {
    std::mutex mutex;
    std::vector<std::unique_ptr<HttpConnection>> idle;
  };

  std::unique_ptr<HttpConnection> take(std::size_t e) {
    {
      std::lock_guard<std::mutex> lock(pools_[e]->mutex);
      auto& idle = pools_[e]->idle;
      while (!idle.empty()) {
        auto connection = std::move(idle.back());
        idle.pop_back();
        if (connection->is_open()) return connection;
      }
    }
    const Endpoint& endpoint = endpoints_[e];
    return std::make_unique<HttpConnection>(
        ConnectionTarget{endpoint.address.host, endpoint.address.port,
                         endpoint.tls ? tls_ : nullptr, endpoint.tls_name},
        options_.api_key.empty() ? std::string() : "Bearer " + options_.api_key);
  }

  void give_back(std::size_t e, std::unique_ptr<HttpConnection> connection) {
    if (!connection->is_open()) return;
    std::lock_guard<std::mutex> lock(pools_[e]->mutex);
    if (pools_[e]->idle.size() < options_.max_idle_connections)
      pools_[e]->idle.push_back(std::move(connection));
  }

  ClientOptions options_;
  std::vector<Endpoint> endpoints_;
  std::shared_ptr<boost::asio::ssl::context> tls_;  // set when an endpoint is https://
  std::vector<std::unique_ptr<Pool>> pools_;
  std::atomic<std::size_t> preferred_{0};
};

}  // namespace fencelock
