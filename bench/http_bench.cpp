// http_bench: load generator for fencelockd's HTTP API. Closed loop: C callers, each on its own
// keep-alive connection, all driven by one thread. One JSON line of results on stdout.
//
//   http_bench --endpoint http[s]://127.0.0.1:8080[,http[s]://127.0.0.1:8081...]
//              --workload uncontended|contended|extend|tokens|idle|connections|set|semaphore|
//                         refused|rwlock|hold|list
//              --callers C --seconds S [--names 10000] [--ttl-ms 10000] [--wait-ms 5000] [--hold-ms
//              1]
//              [--system fencelock] [--api-key SECRET] [--ca-file CA.pem]
//              [--max-connections 20000] [--set-size 4] [--set-pool 0]
//              [--semaphores 8] [--permits 8] [--close-with-reset] [--ramp-ms 0]
//              [--mode write] [--prefix held-] [--limit 100]
//
//   Several endpoints (fencelockd instances sharing lock nodes): caller i talks to endpoint
//   i mod n, so a contended hand-off often crosses instances. --system labels the JSON line.
//   https:// endpoints: TLS 1.2+, the server's certificate checked against --ca-file (else the
//   system's trust store) and its address (an IP subjectAltName); --api-key sends a Bearer key.
//
//   uncontended  acquire a random name out of --names, release it, repeat (ops = pairs)
//   contended    every caller on one name with wait_ms; hold --hold-ms, release (ops = hand-offs
//                granted within --seconds; handoff_* = time from a release's answer to the next
//                grant's answer). Also, for the waiter-count runs of bench/scale.sh: the rate
//                once every caller has sent its first acquire (steady_ops_per_sec, after ramp_ms),
//                callers never granted (callers_never_served), the longest acquire
//                (acquire_max_ms), grants while draining after --seconds (served_after_end),
//                acquires still unanswered when the loader gave up on them (unanswered_at_exit)
//                and acquires answered 503 (unavailable; the caller waits 100 ms before the next).
//   extend       each caller holds its own name and extends it in a loop (ops = extends)
//   tokens       POST /v1/tokens/{random name} (ops = draws)
//   idle         open C connections, send one /healthz each, keep them open for S seconds
//                (ops = connections that got their answer)
//   connections  a new connection per request: connect (+ a full TLS handshake, no resumption),
//                GET /healthz, close; repeat (ops = connections; handshake_* = TLS handshake
//                alone). At most --max-connections in all: each leaves a loopback port in
//                TIME_WAIT.
//   set          lock sets (#19): POST /v1/locks with --set-size names, then DELETE /v1/locks
//                (ops = pairs). --set-pool 0: caller i always asks for its own names set-<i>-<k>,
//                so no two callers meet (the cost of a set alone). --set-pool P: each acquire
//                takes --set-size distinct names at random out of P shared ones pool-<j>, sent in
//                random order, with wait_ms: overlapping sets queue on each other.
//   semaphore    counting semaphores (#19): caller i acquires a permit of sem-<i mod S> (S =
//                --semaphores, each of --permits permits) with wait_ms and releases it (ops =
//                pairs). Callers ≤ S × permits: nobody waits for a permit (8 × 8 at 64 callers);
//                more callers per semaphore than permits: they queue.
//
//   The soft limit on open files is raised to the hard one: C connections need C descriptors.
//   --ramp-ms R: caller c starts (connects) R × c / C ms after the start instead of at once.
//   --close-with-reset: the loader's connections end with a reset (SO_LINGER 0), not a FIN, so
//   they leave no TIME_WAIT behind on the loader's side: 10,000 connections closed by the loader
//   would otherwise hold 10,000 loopback ports for a minute, and any server that binds one of
//   them then (another bench, a test harness) fails with "address in use".
//   refused      the refusal path (#20): callers 0 … N−1 (N = --names, e.g. 4) each take one name
//                with wait_ms and hold it for the run; every caller then acquires a random one of
//                the N without wait, in a loop: each answer should be 409 locked with
//                retry_after_ms (ops = refusals; "no_retry_after" counts those without it;
//                "granted" counts grants, released at once, before the holders got their names).
//                The names carry a per-run tag, so back-to-back runs do not meet.
//   rwlock       read/write locks (#36): POST /v1/rwlocks/{name} with --mode read|write, then
//                DELETE /v1/rwlocks/{name} (ops = pairs). Caller i takes a random name out of its
//                own share of --names (rw-<k>, k ≡ i mod C), so no two callers meet: the cost of a
//                grant of that mode alone, beside the uncontended lock row.
//   hold         takes names <prefix>0 … <prefix>N−1 (N = --names) with --ttl-ms and keeps them:
//                caller i acquires k = i, i + C, … one after another; stops when all are held or at
//                --seconds, whichever comes first (ops = names held; ops_per_sec over the time it
//                took). For the list workload, run by another process.
//   list         pages through GET /v1/locks?prefix=<prefix>&limit=<--limit>&cursor=… in a loop:
//                a listing follows "next" until it is null, then starts again (ops = pages;
//                names_listed; pass_* = the time one whole listing took; short_passes = listings
//                that saw fewer distinct names than --names, which should all be held).
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/resource.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "latency_histogram.h"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Endpoint {
  std::string host = "127.0.0.1";
  unsigned short port = 8080;
  bool tls = false;  // https://
};

struct Settings {
  std::vector<Endpoint> endpoints;
  std::string system = "fencelock";
  std::string workload = "uncontended";
  int callers = 1;
  double seconds = 5;
  int names = 10'000;
  long ttl_ms = 10'000;
  long wait_ms = 5'000;
  long hold_ms = 1;
  std::string authorization;               // --api-key SECRET: "Bearer SECRET" on every request
  std::string ca_file;                     // --ca-file: trust anchors for https:// endpoints
  std::uint64_t max_connections = 20'000;  // the connections workload stops there
  int set_size = 4;                        // set: names per acquire (1..16)
  int set_pool = 0;                        // set: 0 = each caller its own names, else shared pool
  int semaphores = 8;                      // semaphore: how many semaphores the callers spread over
  int permits = 8;                         // semaphore: permits of each (1..64)
  bool close_with_reset = false;           // --close-with-reset: SO_LINGER 0 on every connection
  long ramp_ms = 0;                        // --ramp-ms: callers start spread over this (0: at once)
  std::string run_tag;                     // refused: makes this run's names its own
  std::string mode = "write";              // rwlock: "read" or "write"
  std::string prefix = "held-";            // hold, list: the names held and listed
  int limit = 100;                         // list: names per page asked for (1..1000)
};

struct Totals {
  std::uint64_t ops = 0, refused = 0, errors = 0;
  fencelock::bench::LatencyHistogram latency;  // acquire (or the op itself)
  fencelock::bench::LatencyHistogram pair;     // acquire + release
  fencelock::bench::LatencyHistogram handoff;  // contended: release answered → next grant answered
  fencelock::bench::LatencyHistogram handshake;   // connections over TLS: the handshake alone
  std::uint64_t connections = 0;                  // connections workload: started so far
  std::uint64_t granted = 0, no_retry_after = 0;  // refused workload (see the top comment)
  Clock::time_point last_release{};
  // Contended (bench/scale.sh's waiter counts): fairness and the rate with every caller queued.
  std::vector<std::uint32_t> grants_by_caller;  // grants per caller index, drain included
  int callers_sent = 0;                         // callers that have sent their first request
  Clock::time_point ramp_done{};                // when the last of them did
  std::uint64_t steady_ops = 0;                 // grants after ramp_done, before the end
  std::uint64_t served_after_end = 0;           // grants while draining
  std::uint64_t waiting = 0;                    // acquires sent, not answered yet
  std::uint64_t unavailable = 0;                // acquires answered 503 (also in errors)
  // list: names on all pages, whole listings done, those that missed held names, their durations.
  std::uint64_t names_listed = 0, passes = 0, short_passes = 0;
  fencelock::bench::LatencyHistogram pass;
};

using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// One caller on one connection; Stream is PlainStream or TlsStream.
template <class Stream>
class Caller : public std::enable_shared_from_this<Caller<Stream>> {
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

 public:
  Caller(asio::io_context& io, ssl::context* tls, const Settings& s, const Endpoint& endpoint,
         Totals& totals, Clock::time_point end, int index, unsigned seed)
      : index_(index),
        io_(io),
        tls_(tls),
        stream_(make_stream(io, tls)),
        timer_(io),
        s_(s),
        endpoint_(endpoint),
        totals_(totals),
        end_(end),
        rng_(seed) {}

  void start() {
    connect_started_ = Clock::now();
    ++totals_.connections;
    beast::get_lowest_layer(stream_).async_connect(
        tcp::endpoint(asio::ip::make_address(endpoint_.host), endpoint_.port),
        [self = this->shared_from_this()](beast::error_code ec) {
          if (ec) {
            ++self->totals_.errors;
            return self->reconnect();
          }
          auto& socket = beast::get_lowest_layer(self->stream_).socket();
          socket.set_option(tcp::no_delay(true));
          if (self->s_.close_with_reset) socket.set_option(asio::socket_base::linger(true, 0));
          self->handshake();
        });
  }

 private:
  using Then = void (Caller::*)(unsigned, const json&);

  static Stream make_stream(asio::io_context& io, ssl::context* tls) {
    if constexpr (kTls) {
      return Stream(io, *tls);
    } else {
      (void)tls;
      return Stream(io);
    }
  }

  void handshake() {
    if constexpr (kTls) {
      // Check the certificate against the address we dialled (an IP subjectAltName).
      SSL* handle = stream_.native_handle();
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(handle), endpoint_.host.c_str());
      const auto started = Clock::now();
      stream_.async_handshake(ssl::stream_base::client, [self = this->shared_from_this(),
                                                         started](beast::error_code ec) {
        if (ec) {
          std::fprintf(stderr, "http_bench: TLS handshake failed: %s\n", ec.message().c_str());
          ++self->totals_.errors;
          return self->reconnect();
        }
        self->totals_.handshake.record(Clock::now() - started);
        self->begin();
      });
    } else {
      begin();
    }
  }

  // The connections workload: the next connection is a new Caller (an SSL object serves one
  // connection); the others stop at their first failure, as before.
  void reconnect() {
    if (s_.workload != "connections" || Clock::now() >= end_ ||
        totals_.connections >= s_.max_connections)
      return;
    std::make_shared<Caller>(io_, tls_, s_, endpoint_, totals_, end_, index_, rng_())->start();
  }

  void begin() {
    if (s_.workload == "extend") {
      name_ = "extend-" + std::to_string(rng_());
      send(http::verb::post, "/v1/locks/" + name_, json{{"ttl_ms", s_.ttl_ms}}.dump(),
           &Caller::on_extend_held);
      return;
    }
    if (s_.workload == "idle") {
      send(http::verb::get, "/healthz", "", &Caller::on_idle);
      return;
    }
    if (s_.workload == "connections") {
      send(http::verb::get, "/healthz", "", &Caller::on_connection);
      return;
    }
    if (s_.workload == "refused" && index_ < s_.names) {
      hold_refused_name();
      return;
    }
    if (s_.workload == "hold") {
      held_next_ = index_;
      hold_next();
      return;
    }
    if (s_.workload == "list") {
      list_next();
      return;
    }
    next();
  }

  void next() {
    if (Clock::now() >= end_) return;
    started_ = Clock::now();
    if (!sent_first_) {
      sent_first_ = true;
      if (++totals_.callers_sent == s_.callers) totals_.ramp_done = started_;
    }
    if (s_.workload == "uncontended") {
      name_ = "bench-" + std::to_string(rng_() % static_cast<unsigned>(s_.names));
      send(http::verb::post, "/v1/locks/" + name_, json{{"ttl_ms", s_.ttl_ms}}.dump(),
           &Caller::on_acquired);
    } else if (s_.workload == "contended") {
      name_ = "hot";
      ++totals_.waiting;
      send(http::verb::post, "/v1/locks/hot",
           json{{"ttl_ms", s_.ttl_ms}, {"wait_ms", s_.wait_ms}}.dump(), &Caller::on_acquired);
    } else if (s_.workload == "tokens") {
      send(http::verb::post,
           "/v1/tokens/bench-" + std::to_string(rng_() % static_cast<unsigned>(s_.names)), "",
           &Caller::on_simple);
    } else if (s_.workload == "extend") {
      send(http::verb::post, "/v1/locks/" + name_ + "/extend",
           json{{"lease", lease_}, {"ttl_ms", s_.ttl_ms}}.dump(), &Caller::on_simple);
    } else if (s_.workload == "set") {
      set_names_ = pick_set();
      json body{{"names", set_names_}, {"ttl_ms", s_.ttl_ms}};
      if (s_.set_pool > 0) body["wait_ms"] = s_.wait_ms;
      send(http::verb::post, "/v1/locks", body.dump(), &Caller::on_acquired);
    } else if (s_.workload == "refused") {
      name_ = refused_name(static_cast<int>(rng_() % static_cast<unsigned>(s_.names)));
      send(http::verb::post, "/v1/locks/" + name_, json{{"ttl_ms", s_.ttl_ms}}.dump(),
           &Caller::on_refusal);
    } else if (s_.workload == "semaphore") {
      name_ = "sem-" + std::to_string(index_ % s_.semaphores);
      send(http::verb::post, "/v1/semaphores/" + name_,
           json{{"permits", s_.permits}, {"ttl_ms", s_.ttl_ms}, {"wait_ms", s_.wait_ms}}.dump(),
           &Caller::on_acquired);
    } else if (s_.workload == "rwlock") {
      const auto share = static_cast<unsigned>(std::max(s_.names / s_.callers, 1));
      name_ = "rw-" + std::to_string(index_ + s_.callers * static_cast<int>(rng_() % share));
      send(http::verb::post, "/v1/rwlocks/" + name_,
           json{{"mode", s_.mode}, {"ttl_ms", s_.ttl_ms}}.dump(), &Caller::on_acquired);
    }
  }

  // The names of the next set, in the order they are sent (the service sorts them).
  json pick_set() {
    std::vector<std::string> names;
    if (s_.set_pool == 0) {
      for (int k = 0; k < s_.set_size; ++k)
        names.push_back("set-" + std::to_string(index_) + "-" + std::to_string(k));
    } else {
      std::vector<int> pool(static_cast<std::size_t>(s_.set_pool));
      for (std::size_t j = 0; j < pool.size(); ++j) pool[j] = static_cast<int>(j);
      for (std::size_t k = 0; k < static_cast<std::size_t>(s_.set_size); ++k) {
        std::swap(pool[k], pool[k + rng_() % (pool.size() - k)]);
        names.push_back("pool-" + std::to_string(pool[k]));
      }
    }
    std::shuffle(names.begin(), names.end(), rng_);
    return names;
  }

  // A grant's answer has the shape docs/api.md gives it (a token per name of a set, a slot
  // below the permit count): a smoke test of the feature as well as a load.
  bool grant_well_formed(const json& body) const {
    if (!body.is_object() || !body.contains("lease") || !body["lease"].is_string()) return false;
    if (s_.workload == "set")
      return body.contains("tokens") && body["tokens"].is_object() &&
             body["tokens"].size() == static_cast<std::size_t>(s_.set_size);
    if (s_.workload == "semaphore")
      return body.value("permits", 0) == s_.permits && body.value("slot", -1) >= 0 &&
             body.value("slot", -1) < s_.permits;
    if (s_.workload == "rwlock") {  // the lease is bound to its mode: "<token>.<proof>.r" or ".w"
      const std::string lease = body["lease"];
      return body.value("mode", "") == s_.mode && lease.size() > 2 &&
             lease.compare(lease.size() - 2, 2, s_.mode == "read" ? ".r" : ".w") == 0;
    }
    return true;
  }

  void send(http::verb verb, const std::string& target, std::string body, Then then) {
    request_ = {verb, target, 11};
    request_.set(http::field::host, endpoint_.host);
    if (!s_.authorization.empty()) request_.set(http::field::authorization, s_.authorization);
    if (!body.empty()) request_.set(http::field::content_type, "application/json");
    request_.body() = std::move(body);
    request_.prepare_payload();
    then_ = then;
    http::async_write(
        stream_, request_, [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
          if (ec) {
            ++self->totals_.errors;
            return self->reconnect();
          }
          self->response_ = {};
          http::async_read(self->stream_, self->buffer_, self->response_,
                           [self](beast::error_code read_ec, std::size_t) {
                             if (read_ec) {
                               ++self->totals_.errors;
                               return self->reconnect();
                             }
                             const json answer =
                                 json::parse(self->response_.body(), nullptr, false);
                             (self.get()->*(self->then_))(self->response_.result_int(), answer);
                           });
        });
  }

  void on_acquired(unsigned status, const json& body) {
    const auto now = Clock::now();
    totals_.latency.record(now - started_);
    if (s_.workload == "contended") --totals_.waiting;
    if (status != 200) {
      ++(status == 409 ? totals_.refused : totals_.errors);
      if (s_.workload == "contended" && status == 503) {
        // Unavailable (too few lock nodes answered in time): back off as a client would, instead
        // of asking again at once and adding to what overloaded the nodes.
        ++totals_.unavailable;
        timer_.expires_after(std::chrono::milliseconds(100));
        timer_.async_wait([self = this->shared_from_this()](beast::error_code) { self->next(); });
        return;
      }
      return next();
    }
    if (!grant_well_formed(body)) ++totals_.errors;
    if (s_.workload == "contended") {
      if (totals_.last_release != Clock::time_point{})
        totals_.handoff.record(now - totals_.last_release);
      ++totals_.grants_by_caller[static_cast<std::size_t>(index_)];
      if (now >= end_) {
        ++totals_.served_after_end;
      } else {
        ++totals_.ops;
        if (totals_.ramp_done != Clock::time_point{}) ++totals_.steady_ops;
      }
      lease_ = body.value("lease", "");
      timer_.expires_after(std::chrono::milliseconds(s_.hold_ms));
      timer_.async_wait([self = this->shared_from_this()](beast::error_code) { self->release(); });
      return;
    }
    lease_ = body.value("lease", "");
    release();
  }

  void release() {
    if (s_.workload == "set")
      send(http::verb::delete_, "/v1/locks", json{{"names", set_names_}, {"lease", lease_}}.dump(),
           &Caller::on_released);
    else if (s_.workload == "semaphore")
      send(http::verb::delete_, "/v1/semaphores/" + name_, json{{"lease", lease_}}.dump(),
           &Caller::on_released);
    else if (s_.workload == "rwlock")
      send(http::verb::delete_, "/v1/rwlocks/" + name_, json{{"lease", lease_}}.dump(),
           &Caller::on_released);
    else
      send(http::verb::delete_, "/v1/locks/" + name_, json{{"lease", lease_}}.dump(),
           &Caller::on_released);
  }

  void on_released(unsigned status, const json& body) {
    const auto now = Clock::now();
    // A lease of 10 s released within milliseconds must still have been held everywhere.
    const bool checks_released =
        s_.workload == "set" || s_.workload == "semaphore" || s_.workload == "rwlock";
    if (status != 200 || (checks_released && !(body.is_object() && body.value("released", false))))
      ++totals_.errors;
    if (s_.workload == "contended") {
      totals_.last_release = now;
    } else {
      ++totals_.ops;
      totals_.pair.record(now - started_);
    }
    next();
  }

  // ---- the refused workload (#20) ----
  std::string refused_name(int k) const {
    return "refused-" + s_.run_tag + "-" + std::to_string(k);
  }

  // Caller k < N holds name k for the whole run (and then some: it is never released).
  void hold_refused_name() {
    const long ttl_ms = std::max(s_.ttl_ms, static_cast<long>(s_.seconds * 1000) + 10'000);
    send(http::verb::post, "/v1/locks/" + refused_name(index_),
         json{{"ttl_ms", ttl_ms}, {"wait_ms", s_.wait_ms}}.dump(), &Caller::on_refused_name_held);
  }

  void on_refused_name_held(unsigned status, const json&) {
    if (status != 200) ++totals_.errors;
    next();
  }

  void on_refusal(unsigned status, const json& body) {
    totals_.latency.record(Clock::now() - started_);
    if (status == 200) {  // before its holder got it: give it back at once
      ++totals_.granted;
      lease_ = body.value("lease", "");
      send(http::verb::delete_, "/v1/locks/" + name_, json{{"lease", lease_}}.dump(),
           &Caller::on_simple_then_next);
      return;
    }
    const bool locked = status == 409 && body.is_object() && body.contains("error") &&
                        body["error"].value("code", "") == "locked";
    if (!locked) {
      ++totals_.errors;
      return next();
    }
    ++totals_.ops;
    if (!body["error"].contains("retry_after_ms") ||
        !body["error"]["retry_after_ms"].is_number_integer())
      ++totals_.no_retry_after;
    next();
  }

  void on_simple_then_next(unsigned status, const json&) {
    if (status != 200) ++totals_.errors;
    next();
  }
  // ---- end of the refused workload ----

  // ---- the hold and list workloads (#36: listing held names beside grants) ----
  void hold_next() {
    if (held_next_ >= s_.names || Clock::now() >= end_) return;
    started_ = Clock::now();
    send(http::verb::post, "/v1/locks/" + s_.prefix + std::to_string(held_next_),
         json{{"ttl_ms", s_.ttl_ms}}.dump(), &Caller::on_held);
    held_next_ += s_.callers;
  }

  void on_held(unsigned status, const json&) {
    totals_.latency.record(Clock::now() - started_);
    if (status == 200)
      ++totals_.ops;
    else
      ++(status == 409 ? totals_.refused : totals_.errors);
    hold_next();
  }

  void list_next() {
    if (Clock::now() >= end_) return;  // a listing still under way is not counted
    started_ = Clock::now();
    if (cursor_.empty()) {
      pass_started_ = started_;
      pass_names_.clear();
    }
    send(http::verb::get,
         "/v1/locks?prefix=" + s_.prefix + "&limit=" + std::to_string(s_.limit) +
             (cursor_.empty() ? "" : "&cursor=" + cursor_),
         "", &Caller::on_page);
  }

  void on_page(unsigned status, const json& body) {
    const auto now = Clock::now();
    totals_.latency.record(now - started_);
    if (status != 200 || !body.is_object() || !body.contains("locks") ||
        !body["locks"].is_array()) {
      ++totals_.errors;
      cursor_.clear();  // start the listing again, as docs/api.md says to after a 503
      return list_next();
    }
    ++totals_.ops;
    totals_.names_listed += body["locks"].size();
    for (const json& lock : body["locks"]) pass_names_.insert(lock.value("name", ""));
    if (body.contains("next") && body["next"].is_string()) {
      cursor_ = body["next"];
      return list_next();
    }
    ++totals_.passes;
    totals_.pass.record(now - pass_started_);
    if (pass_names_.size() < static_cast<std::size_t>(s_.names)) ++totals_.short_passes;
    cursor_.clear();
    list_next();
  }
  // ---- end of the hold and list workloads ----

  void on_extend_held(unsigned status, const json& body) {
    if (status != 200) {
      ++totals_.errors;
      return;
    }
    lease_ = body.value("lease", "");
    next();
  }

  void on_simple(unsigned status, const json&) {
    totals_.latency.record(Clock::now() - started_);
    if (status == 200)
      ++totals_.ops;
    else
      ++totals_.errors;
    next();
  }

  void on_idle(unsigned status, const json&) {
    if (status == 200) ++totals_.ops;
    timer_.expires_at(end_);
    timer_.async_wait(
        [self = this->shared_from_this()](beast::error_code) {});  // hold the connection open
  }

  void on_connection(unsigned status, const json&) {
    totals_.latency.record(Clock::now() - connect_started_);
    ++(status == 200 ? totals_.ops : totals_.errors);
    // No close_notify: a client that just goes is what the server meets most, and costs least.
    beast::error_code ignored;
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(stream_).socket().close(ignored);
    reconnect();
  }

  int index_;  // which caller: set's own names, semaphore's choice
  asio::io_context& io_;
  ssl::context* tls_;  // https:// endpoints only
  Stream stream_;
  asio::steady_timer timer_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
  const Settings& s_;
  const Endpoint& endpoint_;
  Totals& totals_;
  Clock::time_point end_;
  Clock::time_point started_;
  Clock::time_point connect_started_;
  std::mt19937 rng_;
  std::string name_, lease_;
  json set_names_;
  Then then_ = nullptr;
  bool sent_first_ = false;  // this caller's first request of next() went out
  int held_next_ = 0;        // hold: the next name this caller takes
  std::string cursor_;       // list: the next page's cursor ("": a new listing)
  Clock::time_point pass_started_;
  std::unordered_set<std::string> pass_names_;  // list: distinct names of this listing so far
};

// Each connection is a descriptor: allow as many as the hard limit does.
void raise_open_file_limit(int callers) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
    ::getrlimit(RLIMIT_NOFILE, &limit);
  }
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < static_cast<rlim_t>(callers) + 16)
    std::fprintf(stderr, "http_bench: %d callers need more open files than the limit of %llu\n",
                 callers, static_cast<unsigned long long>(limit.rlim_cur));
}

// CPU time (user + system) this process has used so far, in ms.
double cpu_ms() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto ms_of = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) * 1000.0 + static_cast<double>(t.tv_usec) / 1000.0;
  };
  return ms_of(usage.ru_utime) + ms_of(usage.ru_stime);
}

double ms(std::chrono::microseconds d) {
  return static_cast<double>(d.count()) / 1000.0;
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; i += 2) {
    if (std::string(argv[i]) == "--close-with-reset") {
      s.close_with_reset = true;
      --i;  // a flag without a value
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "http_bench: %s needs a value\n", argv[i]);
      return 2;
    }
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--endpoint") {
      std::size_t from = 0;
      while (from < value.size()) {
        const std::size_t comma = std::min(value.find(',', from), value.size());
        const std::string url = value.substr(from, comma - from);
        const std::string hostport =
            url.substr(url.find("//") == std::string::npos ? 0 : url.find("//") + 2);
        Endpoint endpoint;
        endpoint.tls = url.rfind("https://", 0) == 0;
        endpoint.host = hostport.substr(0, hostport.rfind(':'));
        endpoint.port =
            static_cast<unsigned short>(std::stoi(hostport.substr(hostport.rfind(':') + 1)));
        s.endpoints.push_back(endpoint);
        from = comma + 1;
      }
    } else if (flag == "--system")
      s.system = value;
    else if (flag == "--workload")
      s.workload = value;
    else if (flag == "--callers")
      s.callers = std::stoi(value);
    else if (flag == "--seconds")
      s.seconds = std::stod(value);
    else if (flag == "--names")
      s.names = std::stoi(value);
    else if (flag == "--ttl-ms")
      s.ttl_ms = std::stol(value);
    else if (flag == "--wait-ms")
      s.wait_ms = std::stol(value);
    else if (flag == "--hold-ms")
      s.hold_ms = std::stol(value);
    else if (flag == "--api-key")
      s.authorization = "Bearer " + value;
    else if (flag == "--ca-file")
      s.ca_file = value;
    else if (flag == "--max-connections")
      s.max_connections = std::stoull(value);
    else if (flag == "--set-size")
      s.set_size = std::stoi(value);
    else if (flag == "--set-pool")
      s.set_pool = std::stoi(value);
    else if (flag == "--semaphores")
      s.semaphores = std::stoi(value);
    else if (flag == "--permits")
      s.permits = std::stoi(value);
    else if (flag == "--ramp-ms")
      s.ramp_ms = std::stol(value);
    else if (flag == "--mode")
      s.mode = value;
    else if (flag == "--prefix")
      s.prefix = value;
    else if (flag == "--limit")
      s.limit = std::stoi(value);
    else {
      std::fprintf(stderr, "http_bench: unknown flag %s (see the comment at the top)\n",
                   flag.c_str());
      return 2;
    }
  }
  if (s.endpoints.empty()) s.endpoints.push_back(Endpoint{});
  s.run_tag = std::to_string(std::random_device{}() % 1'000'000'000);
  if (s.set_size < 1 || s.set_pool < 0 || (s.set_pool > 0 && s.set_pool < s.set_size) ||
      s.semaphores < 1 || s.permits < 1 || s.callers < 1 ||
      (s.mode != "read" && s.mode != "write") || s.limit < 1 || s.limit > 1000) {
    std::fprintf(stderr,
                 "http_bench: --set-size ≥ 1, --set-pool 0 or ≥ --set-size, "
                 "--semaphores ≥ 1, --permits ≥ 1, --callers ≥ 1, --mode read or write and "
                 "--limit 1..1000\n");
    return 2;
  }
  raise_open_file_limit(s.callers);
  asio::io_context io(1);
  // One context for every https:// caller: TLS 1.2+, the server's certificate must verify.
  ssl::context tls(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(tls.native_handle(), TLS1_2_VERSION);
  tls.set_verify_mode(ssl::verify_peer);
  if (s.ca_file.empty())
    tls.set_default_verify_paths();
  else
    tls.load_verify_file(s.ca_file);
  Totals totals;
  totals.grants_by_caller.assign(static_cast<std::size_t>(std::max(s.callers, 0)), 0);
  const double cpu_started = cpu_ms();
  const auto started = Clock::now();
  const auto end = started + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(s.seconds));
  // --ramp-ms R: caller c connects at c × R / C ms (0: all at once).
  std::vector<std::unique_ptr<asio::steady_timer>> ramp;
  for (int c = 0; c < s.callers; ++c) {
    const Endpoint& endpoint = s.endpoints[static_cast<std::size_t>(c) % s.endpoints.size()];
    const auto seed = static_cast<unsigned>(c + 1);
    std::function<void()> start_caller = [&io, &tls, &s, &endpoint, &totals, end, c, seed] {
      if (endpoint.tls)
        std::make_shared<Caller<TlsStream>>(io, &tls, s, endpoint, totals, end, c, seed)->start();
      else
        std::make_shared<Caller<PlainStream>>(io, nullptr, s, endpoint, totals, end, c, seed)
            ->start();
    };
    if (s.ramp_ms <= 0) {
      start_caller();
      continue;
    }
    ramp.push_back(std::make_unique<asio::steady_timer>(
        io, started + std::chrono::microseconds(s.ramp_ms * 1000 * c / s.callers)));
    ramp.back()->async_wait([start_caller](beast::error_code) { start_caller(); });
  }  // the callers keep themselves alive while they have work
  // Callers that wait (wait_ms) may still be queued at the end: give them their wait.
  const bool waits = s.workload == "contended" || s.workload == "semaphore" ||
                     (s.workload == "set" && s.set_pool > 0);
  // (at least their wait_ms: 10,000 queued waiters take a while to be served one by one).
  const auto drain = waits ? std::max<Clock::duration>(std::chrono::seconds(10),
                                                       std::chrono::milliseconds(s.wait_ms + 2000))
                           : std::chrono::seconds(3);
  io.run_until(end + drain);
  const double elapsed =
      std::chrono::duration<double>(std::min(Clock::now(), end + std::chrono::seconds(1)) - started)
          .count();
  // Contended ops are counted within --seconds only (the drain's grants are served_after_end).
  // hold ends when every name is held: its rate is over the time that took.
  const double window = s.workload == "contended" ? s.seconds
                        : s.workload == "hold"    ? elapsed
                                                  : std::max(elapsed, s.seconds);

  json out{{"system", s.system},
           {"instances", s.endpoints.size()},
           {"workload", s.workload},
           {"callers", s.callers},
           {"seconds", s.seconds},
           {"ops", totals.ops},
           {"ops_per_sec", static_cast<double>(totals.ops) / window},
           {"p50_ms", ms(totals.latency.quantile(0.5))},
           {"p90_ms", ms(totals.latency.quantile(0.9))},
           {"p99_ms", ms(totals.latency.quantile(0.99))},
           {"p999_ms", ms(totals.latency.quantile(0.999))},
           {"refused", totals.refused},
           {"errors", totals.errors}};
  if (s.workload == "set") {
    out["set_size"] = s.set_size;
    out["set_pool"] = s.set_pool;
  }
  if (s.workload == "semaphore") {
    out["semaphores"] = s.semaphores;
    out["permits"] = s.permits;
  }
  if (s.workload == "refused") {
    out["held_names"] = s.names;
    out["granted"] = totals.granted;
    out["no_retry_after"] = totals.no_retry_after;
  }
  if (s.workload == "rwlock") out["mode"] = s.mode;
  if (s.workload == "hold") {
    out["wanted"] = s.names;
    out["elapsed_s"] = elapsed;
    out["ttl_ms"] = s.ttl_ms;
  }
  if (s.workload == "list") {
    out["held_names"] = s.names;
    out["limit"] = s.limit;
    out["names_listed"] = totals.names_listed;
    out["names_per_sec"] = static_cast<double>(totals.names_listed) / window;
    out["passes"] = totals.passes;
    out["short_passes"] = totals.short_passes;
    out["pass_min_ms"] = ms(totals.pass.quantile(0.0));
    out["pass_p50_ms"] = ms(totals.pass.quantile(0.5));
    out["pass_max_ms"] = ms(totals.pass.quantile(1.0));
    out["client_cpu_ms_per_op"] =
        (cpu_ms() - cpu_started) / static_cast<double>(std::max<std::uint64_t>(totals.ops, 1));
  }
  if (s.workload == "uncontended" || s.workload == "set" || s.workload == "semaphore" ||
      s.workload == "rwlock") {
    out["pair_p50_ms"] = ms(totals.pair.quantile(0.5));
    out["pair_p99_ms"] = ms(totals.pair.quantile(0.99));
  }
  if (s.workload == "contended") {
    out["handoff_p50_ms"] = ms(totals.handoff.quantile(0.5));
    out["handoff_p90_ms"] = ms(totals.handoff.quantile(0.9));
    out["handoff_p99_ms"] = ms(totals.handoff.quantile(0.99));
    out["acquire_max_ms"] = ms(totals.latency.quantile(1.0));
    out["served_after_end"] = totals.served_after_end;
    out["unanswered_at_exit"] = totals.waiting;
    out["unavailable"] = totals.unavailable;
    out["callers_never_served"] = std::count(totals.grants_by_caller.begin(),
                                             totals.grants_by_caller.end(), std::uint32_t{0});
    out["wait_ms"] = s.wait_ms;
    if (totals.ramp_done != Clock::time_point{} && totals.ramp_done < end) {
      out["ramp_ms"] =
          std::chrono::duration<double, std::milli>(totals.ramp_done - started).count();
      out["steady_ops_per_sec"] = static_cast<double>(totals.steady_ops) /
                                  std::chrono::duration<double>(end - totals.ramp_done).count();
    }
  }
  if (s.endpoints.front().tls) out["tls"] = true;
  if (s.workload == "connections" && totals.ops > 0)  // the client's side of the handshake cost
    out["client_cpu_ms_per_op"] = (cpu_ms() - cpu_started) / static_cast<double>(totals.ops);
  if (s.workload == "connections" && totals.handshake.count() > 0) {
    out["handshake_p50_ms"] = ms(totals.handshake.quantile(0.5));
    out["handshake_p99_ms"] = ms(totals.handshake.quantile(0.99));
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
