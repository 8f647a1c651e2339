// What the HTTP sessions of one server share: their settings, the handlers, the request observer,
// and the registry that caps and drains them. Each session holds the host by shared_ptr and reports
// its end through it, so a session that outlives the server (its last handler discarded when the
// io_context is torn down) never calls into a destroyed server; the server detaches its drain
// callback when it goes.
// Thread-safe: sessions on many strands add and forget themselves concurrently.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/route.h"
#include "fencelock/storage/engine_options.h"
#include "http/browser_guard.h"
#include "http/exchange.h"
#include "http/session.h"

namespace fencelock::service {

struct HttpServerOptions {
  storage::NodeAddress listen{"127.0.0.1", 8080};
  std::size_t body_limit = std::size_t{64} * 1024;  // bytes of request body; more → 413
  std::size_t header_limit =
      std::size_t{8} * 1024;             // bytes of request line + headers; more → 431-ish 400
  std::size_t max_connections = 10'000;  // further ones: health checks only, then 503 + close
  std::size_t max_connections_per_client = 1000;      // from one source address; further ones: 503
  std::chrono::milliseconds idle_timeout{60'000};     // waiting for a request's first byte
  std::chrono::milliseconds request_timeout{10'000};  // from its first byte to its last
  std::chrono::milliseconds write_timeout{30'000};
  // TLS: the whole handshake, from accept (at most request_timeout). Much shorter than a request
  // may take: a handshake is a round trip or two, and an unfinished one holds a descriptor.
  std::chrono::milliseconds handshake_timeout{3'000};
  std::size_t body_memory = std::size_t{64} * 1024 * 1024;  // request bodies held at once
  BrowserGuardOptions browser;  // Host, Origin and Content-Type checks (browser_guard.h)
};

// Connections accepted over max_connections (at most kOverCapConnections at once) may still ask
// for /healthz, /readyz or /metrics: probes keep working while the cap is full. Such a connection
// must send its request head within kOverCapHeaderTimeout of its first read, so connections that
// say nothing cannot keep probes out for long; any request other than a probe is answered 503.
inline constexpr std::size_t kOverCapConnections = 256;
inline constexpr std::chrono::milliseconds kOverCapHeaderTimeout{1000};

// What a connection's read buffer may hold beyond the header and body limits: chunk-size lines,
// chunk extensions, trailers and line ends. A head and a body that do not fit in header_limit +
// body_limit + kFramingSlack are refused (400 or 413) and the connection closed: every byte a
// client sends counts against a limit before it is buffered.
inline constexpr std::size_t kFramingSlack = 4096;

// How a new connection is let in.
enum class Admission {
  kServe,         // under every cap
  kHealthOnly,    // over max_connections, within kOverCapConnections: probes only, then closed
  kRefuseCapped,  // over both: 503 at once, closed (TLS: closed at once)
  kRefuseClient,  // over max_connections_per_client for its address: likewise
};

// At most this many tls_handshake_failed lines a second; the rest are counted, and the next line
// says how many were not logged. The metric counts every failure.
inline constexpr std::size_t kHandshakeFailureLogsPerSecond = 5;

// A request's id, for the log line and the X-Request-Id header: the client's own if it sent an
// acceptable one (accept_request_id()), else one the server makes (SessionHost::new_request_id()).
inline constexpr std::size_t kMaxRequestIdBytes = 64;
class RequestId {
 public:
  std::string_view view() const noexcept { return {bytes_.data(), size_}; }
  // Takes `text` if it is 1..kMaxRequestIdBytes of printable ASCII other than space, '"' and '\\'
  // (so it goes into a header and a log field as is); otherwise keeps the id it has and returns
  // false.
  bool accept(std::string_view text) noexcept;
  void assign_hex(std::uint64_t value) noexcept;

 private:
  std::array<char, kMaxRequestIdBytes> bytes_{};
  std::size_t size_ = 0;
};

// What the request log and the metrics learn about each answered request. Views into the session:
// valid during the observer's call only.
struct RequestRecord {
  std::string_view method;
  Route route;
  std::string_view name;  // empty for routes without one
  unsigned status;
  std::chrono::steady_clock::duration duration;
  const AnswerLog* answer;  // what the handler had to say, or nullptr
  std::string_view client;  // the subject of the connection's TLS client certificate, or empty
  std::string_view peer;    // the client's address ("127.0.0.1", "::1")
  std::string_view request_id;
};
using RequestObserver = std::function<void(const RequestRecord&)>;

class SessionHost {
 public:
  SessionHost(HttpServerOptions options, RequestHandler& handlers, RequestObserver observer)
      : options_(std::move(options)), handlers_(handlers), observer_(std::move(observer)) {}

  const HttpServerOptions& options() const noexcept { return options_; }
  RequestHandler& handlers() noexcept { return handlers_; }
  void observe(const RequestRecord& record) const {
    if (observer_) observer_(record);
  }
  bool draining() const noexcept { return draining_.load(std::memory_order_relaxed); }
  std::size_t open_connections() const noexcept { return open_.load(std::memory_order_relaxed); }
  // A fresh request id: 16 hex digits, unique within this process and unlikely to repeat across
  // restarts (a random start). Thread-safe, lock-free.
  void new_request_id(RequestId& id) noexcept {
    id.assign_hex(request_id_base_ + request_ids_.fetch_add(1, std::memory_order_relaxed));
  }
  // A client closed its connection in the middle of sending a request (or while its request was
  // being handled): not an answered request, so counted apart from them.
  void count_hang_up() noexcept { hang_ups_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t hang_ups() const noexcept { return hang_ups_.load(std::memory_order_relaxed); }
  // A request refused on a connection let in over max_connections for probes only (kHealthOnly):
  // counted with the connections refused at accept.
  void count_refused_request() noexcept { refused_.fetch_add(1, std::memory_order_relaxed); }
  // Connections answered 503 at accept (over a cap), and requests other than probes answered 503
  // on a connection let in for probes only, since start.
  std::uint64_t refused_connections() const noexcept {
    return refused_.load(std::memory_order_relaxed);
  }
  // TLS handshakes that failed or timed out (plain HTTP on the TLS port among them), since start.
  void count_tls_handshake_failure() noexcept {
    tls_handshake_failures_.fetch_add(1, std::memory_order_relaxed);
  }
  std::uint64_t tls_handshake_failures() const noexcept {
    return tls_handshake_failures_.load(std::memory_order_relaxed);
  }
  // Whether this failure gets its log line (kHandshakeFailureLogsPerSecond), and if so how many
  // before it did not (`unlogged`). A client that fails handshakes in a loop cannot flood the log.
  bool log_tls_handshake_failure(std::uint64_t& unlogged);
  // Request bodies: reserve `bytes` of the shared budget before reading a body; false (nothing
  // reserved) when it would go over body_memory. Every reservation is given back once.
  bool reserve_body(std::size_t bytes);
  void release_body(std::size_t bytes);
  std::size_t body_bytes_reserved() const noexcept {
    return body_bytes_.load(std::memory_order_relaxed);
  }

  // A session began from `client` (its source address): how it is let in. kServe and
  // kHealthOnly are recorded (forget() undoes it); a refusal records nothing but the count.
  Admission add(const std::shared_ptr<Session>& session, const std::string& client);
  // A session ended (its destructor).
  void forget(Session* session);

  // Starts draining: returns the live sessions (to be told to drain) and runs `drained` once none
  // is left (at once if none is).
  std::vector<std::shared_ptr<Session>> drain(std::function<void()> drained);
  // Takes back the drained callback, if it has not run: for the grace timeout and for the server's
  // destruction. Returns it (empty if it already ran).
  std::function<void()> take_drained();

 private:
  static std::uint64_t random_request_id_base();
  void check_drained();

  const HttpServerOptions options_;
  RequestHandler& handlers_;
  RequestObserver observer_;
  std::atomic<std::size_t> open_{0};
  std::atomic<std::uint64_t> refused_{0};
  std::atomic<std::uint64_t> hang_ups_{0};
  const std::uint64_t request_id_base_ = random_request_id_base();
  std::atomic<std::uint64_t> request_ids_{0};
  std::atomic<std::uint64_t> tls_handshake_failures_{0};
  std::atomic<std::size_t> body_bytes_{0};
  std::atomic<bool> draining_{false};
  std::mutex mutex_;  // guards sessions_, per_client_ and drained_
  struct Entry {
    std::weak_ptr<Session> session;
    std::string client;
  };
  std::unordered_map<Session*, Entry> sessions_;
  std::unordered_map<std::string, std::size_t> per_client_;  // open connections by address
  std::function<void()> drained_;
  std::mutex log_mutex_;  // guards the three below
  std::chrono::steady_clock::time_point log_window_{};
  std::size_t logged_in_window_ = 0;
  std::uint64_t unlogged_ = 0;
};

}  // namespace fencelock::service
