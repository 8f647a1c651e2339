// expiry_bench: how soon after a crashed holder's lease ends a waiter gets the lock (#19).
// Sequential rounds, one name each; one JSON line of results on stdout.
//
//   expiry_bench --holder http://127.0.0.1:8080 --waiter http://127.0.0.1:8081
//                [--rounds 50] [--ttl-ms 200] [--wait-ms 2000] [--max-seconds 60]
//                [--system fencelock] [--placement other]
//
// A round: the holder acquires `expiry-<pid>-<round>` with --ttl-ms through --holder and never
// releases it (a holder that crashed). As soon as that answer is in, the waiter asks for the same
// name with --wait-ms through --waiter: it is refused and waits inside fencelockd. When its grant
// arrives the waiter releases and the next round starts. --holder and --waiter may be the same
// instance (--placement same) or two instances on the same lock nodes (--placement other).
//
// Reference points, both on this process's steady clock, from the holder's side:
//   validity end = the holder's send time + waited_ms + validity_ms of its answer — the moment the
//                  holder was told to stop trusting its lease (docs/api.md); the nodes' keys
//                  expire later by about the drift allowance (1 % of the ttl + 2 ms) plus the
//                  time the holder's request took to reach the nodes.
//   ttl end      = the holder's send time + ttl_ms — a lower bound for the keys' expiry on every
//                  node (each key is written after the send, with PX ttl_ms).
// take-over = the waiter's grant answer arrival − each reference point (negative: granted before
// it). Reported as median / p90 / max (nearest rank, exact) over the rounds that were granted.
// Every round is bounded by --wait-ms on the server and --max-seconds in all.
#include <unistd.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Settings {
  std::string holder = "http://127.0.0.1:8080";
  std::string waiter = "http://127.0.0.1:8080";
  std::string system = "fencelock";
  std::string placement = "same";  // a label only: "same" or "other" instance
  int rounds = 50;
  long ttl_ms = 200;
  long wait_ms = 2'000;
  double max_seconds = 60;
};

struct Answer {
  unsigned status = 0;
  json body;
  Clock::time_point sent, received;
};

// One keep-alive connection to one fencelockd (plain HTTP, loopback).
class Connection {
 public:
  Connection(asio::io_context& io, const std::string& url) : stream_(io) {
    const std::string hostport =
        url.substr(url.find("//") == std::string::npos ? 0 : url.find("//") + 2);
    host_ = hostport.substr(0, hostport.rfind(':'));
    port_ = static_cast<unsigned short>(std::stoi(hostport.substr(hostport.rfind(':') + 1)));
  }

  // Sends one request and reads its answer; reconnects once if the kept-alive connection was
  // closed. nullopt when the exchange failed (error printed on stderr).
  std::optional<Answer> exchange(http::verb verb, const std::string& target, const json& body) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      beast::error_code ec;
      if (!stream_.socket().is_open()) {
        stream_.connect(tcp::endpoint(asio::ip::make_address(host_), port_), ec);
        if (ec) break;
        stream_.socket().set_option(tcp::no_delay(true));
      }
      http::request<http::string_body> request{verb, target, 11};
      request.set(http::field::host, host_);
      request.set(http::field::content_type, "application/json");
      request.body() = body.dump();
      request.prepare_payload();
      Answer answer;
      answer.sent = Clock::now();
      http::write(stream_, request, ec);
      http::response<http::string_body> response;
      if (!ec) http::read(stream_, buffer_, response, ec);
      answer.received = Clock::now();
      if (!ec) {
        answer.status = response.result_int();
        answer.body = json::parse(response.body(), nullptr, false);
        if (!response.keep_alive()) close();
        return answer;
      }
      std::fprintf(stderr, "expiry_bench: %s:%u: %s\n", host_.c_str(), port_, ec.message().c_str());
      close();
    }
    return std::nullopt;
  }

 private:
  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
    buffer_.clear();
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::string host_;
  unsigned short port_ = 8080;
};

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// The q quantile (nearest rank) of samples; null when there are none.
json quantile(std::vector<double> samples, double q) {
  if (samples.empty()) return nullptr;
  std::sort(samples.begin(), samples.end());
  const auto rank =
      static_cast<std::size_t>(std::max(1.0, std::ceil(q * static_cast<double>(samples.size()))));
  return std::round(samples[rank - 1] * 1000.0) / 1000.0;
}

long as_ms(const json& body, const char* key) {
  const auto it = body.find(key);
  return it != body.end() && it->is_number_integer() ? it->get<long>() : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--holder")
      s.holder = value;
    else if (flag == "--waiter")
      s.waiter = value;
    else if (flag == "--system")
      s.system = value;
    else if (flag == "--placement")
      s.placement = value;
    else if (flag == "--rounds")
      s.rounds = std::stoi(value);
    else if (flag == "--ttl-ms")
      s.ttl_ms = std::stol(value);
    else if (flag == "--wait-ms")
      s.wait_ms = std::stol(value);
    else if (flag == "--max-seconds")
      s.max_seconds = std::stod(value);
    else {
      std::fprintf(stderr, "expiry_bench: unknown flag %s (see the comment at the top)\n",
                   flag.c_str());
      return 2;
    }
  }
  if (s.rounds < 1 || s.rounds > 10'000 || s.ttl_ms < 1 || s.wait_ms < 1 || s.max_seconds <= 0) {
    std::fprintf(stderr,
                 "expiry_bench: --rounds 1..10000, --ttl-ms, --wait-ms, --max-seconds > 0\n");
    return 2;
  }
  asio::io_context io(1);
  Connection holder(io, s.holder), waiter(io, s.waiter);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(s.max_seconds));
  std::vector<double> after_validity, after_ttl, waiter_waited;
  int granted = 0, refused = 0, errors = 0, rounds = 0;
  for (; rounds < s.rounds && Clock::now() < deadline; ++rounds) {
    const std::string path =
        "/v1/locks/expiry-" + std::to_string(::getpid()) + "-" + std::to_string(rounds);
    const auto held = holder.exchange(http::verb::post, path, json{{"ttl_ms", s.ttl_ms}});
    if (!held || held->status != 200 || held->body.is_discarded()) {
      ++errors;
      continue;
    }
    const auto from_send = [&](long ms) {
      return held->sent + std::chrono::milliseconds(as_ms(held->body, "waited_ms") + ms);
    };
    const auto validity_end = from_send(as_ms(held->body, "validity_ms"));
    const auto ttl_end = from_send(s.ttl_ms);
    const auto took =
        waiter.exchange(http::verb::post, path, json{{"ttl_ms", s.ttl_ms}, {"wait_ms", s.wait_ms}});
    if (!took || (took->status != 200 && took->status != 409) || took->body.is_discarded()) {
      ++errors;
      continue;
    }
    if (took->status == 409) {  // the waiter's budget ran out before the holder's keys expired
      ++refused;
      continue;
    }
    ++granted;
    after_validity.push_back(ms_between(validity_end, took->received));
    after_ttl.push_back(ms_between(ttl_end, took->received));
    waiter_waited.push_back(static_cast<double>(as_ms(took->body, "waited_ms")));
    if (!waiter.exchange(http::verb::delete_, path, json{{"lease", took->body.value("lease", "")}}))
      ++errors;
  }
  const json out{{"system", s.system},
                 {"workload", "expiry"},
                 {"placement", s.placement},
                 {"rounds", rounds},
                 {"ops", granted},
                 {"ttl_ms", s.ttl_ms},
                 {"wait_ms", s.wait_ms},
                 {"after_validity_p50_ms", quantile(after_validity, 0.5)},
                 {"after_validity_p90_ms", quantile(after_validity, 0.9)},
                 {"after_validity_max_ms", quantile(after_validity, 1.0)},
                 {"after_ttl_p50_ms", quantile(after_ttl, 0.5)},
                 {"after_ttl_p90_ms", quantile(after_ttl, 0.9)},
                 {"after_ttl_max_ms", quantile(after_ttl, 1.0)},
                 {"waited_p50_ms", quantile(waiter_waited, 0.5)},
                 {"refused", refused},
                 {"errors", errors}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
