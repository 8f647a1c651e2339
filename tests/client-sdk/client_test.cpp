// The C++ SDK against the real service (real fencelockd, real redis-servers).
#include "fencelock/client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>

#include "fencelock/lease_keeper.h"
#include "fencelock/lock_guard.h"
#include "service_under_test.h"

using namespace fencelock;
using namespace fencelock::testing;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

Client client_for(ServiceUnderTest& s, ClientOptions options = {}) {
  options.endpoints = {s.endpoint()};
  auto client = Client::create(options);
  if (!client.ok()) FAIL(client.error().message);
  return std::move(client).value();
}

}  // namespace

TEST_CASE("sdk: every call works against the service", "[client][redis]") {
  ServiceUnderTest s;
  Client client = client_for(s);

  const auto sent = Clock::now();
  auto lease = client.acquire("ledger", 10s, 0ms, "sdk-test");
  REQUIRE(lease.ok());
  CHECK(lease->name() == "ledger");
  CHECK(lease->token() >= 1);
  CHECK(lease->valid());
  CHECK(lease->deadline() <= sent + 10s);  // conservative: counted from our send time
  CHECK(lease->remaining() > 9s);

  auto refused = client.acquire("ledger", 10s);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::kLocked);
  CHECK(refused.error().http_status == 409);
  REQUIRE(refused.error().retry_after.has_value());
  CHECK(*refused.error().retry_after > 9s);

  const auto before = lease->deadline();
  REQUIRE(client.extend(lease.value(), 30s).ok());
  CHECK(lease->deadline() > before);
  CHECK(lease->ttl() == 30s);

  auto status = client.status("ledger");
  REQUIRE(status.ok());
  CHECK(status->held);
  CHECK(status->token == lease->token());
  CHECK(status->owner == "sdk-test");
  auto listed = client.list_locks("led");
  REQUIRE(listed.ok());
  REQUIRE(listed->locks.size() == 1);
  CHECK(listed->locks[0].name == "ledger");
  CHECK(listed->locks[0].token == lease->token());
  CHECK(listed->locks[0].owner == "sdk-test");
  CHECK_FALSE(listed->next);
  CHECK(client.list_locks("", 0).error().code == ErrorCode::kInvalidArgument);
  // The refused acquire drew a token before the nodes said no (a gap): the current token is one up.
  CHECK(status->last_token == lease->token() + 1);

  CHECK(client.next_token("counter").value() == 1);
  CHECK(client.next_token("counter").value() == 2);
  CHECK(client.current_token("counter").value() == 2);

  auto unchanged = client.watch("ledger", lease->token(), 100ms);
  REQUIRE(unchanged.ok());
  CHECK_FALSE(unchanged->changed);
  CHECK(unchanged->token == lease->token());
  CHECK(client.watch("ledger", lease->token() + 1, 20s)->changed);  // at once
  CHECK(client.watch("bad name", 1).error().code == ErrorCode::kInvalidArgument);

  CHECK(client.release(lease.value()).value() == true);
  CHECK(client.release(lease.value()).value() == false);  // idempotent
  auto gone = client.watch("ledger", lease->token(), 20s);
  REQUIRE(gone.ok());
  CHECK(gone->changed);
  CHECK_FALSE(gone->held);
  CHECK_FALSE(client.status("ledger")->held);
  CHECK_FALSE(client.status("ledger")->token);
  CHECK_FALSE(client.status("ledger")->owner);
  CHECK(client.extend(lease.value(), 1s).error().code == ErrorCode::kNotHeld);
}

TEST_CASE("sdk: a lease granted after a long wait still has its validity ahead of it",
          "[client][redis]") {
  ServiceUnderTest s;
  Client client = client_for(s);
  REQUIRE(client.acquire("queue", 1500ms).ok());  // expires by itself, found by the retry timer
  const auto sent = Clock::now();
  auto lease = client.acquire("queue", 1s, 10s);  // waits ~1.5 s for a 1 s lease
  const auto answered = Clock::now();
  REQUIRE(lease.ok());
  CHECK(answered - sent >= 1400ms);
  CHECK(lease->valid());
  CHECK(lease->remaining() > 500ms);
  CHECK(lease->deadline() <= answered + 1s);  // still conservative
}

TEST_CASE("sdk: bad input is refused before anything is sent", "[client]") {
  auto client = Client::create({}).value();
  CHECK(client.acquire("bad name", 1s).error().code == ErrorCode::kInvalidArgument);
  CHECK(client.acquire("", 1s).error().code == ErrorCode::kInvalidArgument);
  CHECK(client.acquire("x", 0ms).error().code == ErrorCode::kInvalidArgument);
  CHECK(client.status("a/b").error().code == ErrorCode::kInvalidArgument);
  for (const char* endpoint :
       {"127.0.0.1:8080", "ftp://127.0.0.1:8080", "https://-bad-.example:443",
        "http://under_score.example:80", "http://127.0.0.1"}) {
    ClientOptions options;
    options.endpoints = {endpoint};
    INFO(endpoint);
    CHECK(Client::create(options).error().code == ErrorCode::kInvalidArgument);
  }
  ClientOptions named;
  named.endpoints = {"https://locks.internal:8443", "http://[::1]:8080",
                     "http://Locks.Example.:80"};
  CHECK(Client::create(named).ok());  // DNS names are resolved when connecting
}

TEST_CASE("sdk: a service that is not there is a transport error, quickly", "[client]") {
  ClientOptions options;
  options.endpoints = {"http://127.0.0.1:" + std::to_string(pick_free_port())};
  options.max_retries = 1;
  auto client = Client::create(options).value();
  const auto started = Clock::now();
  CHECK(client.acquire("x", 1s).error().code == ErrorCode::kTransport);
  CHECK(client.status("x").error().code == ErrorCode::kTransport);
  CHECK(Clock::now() - started < 2s);
}

TEST_CASE("sdk: a majority of lock nodes down is unavailable", "[client][redis]") {
  ServiceUnderTest s;
  ClientOptions options;
  options.max_retries = 0;
  Client client = client_for(s, options);
  for (std::size_t i = 0; i < 3; ++i) s.cluster.node(i).kill();
  s.wait_ready(503);
  CHECK(client.acquire("x", 1s).error().code == ErrorCode::kUnavailable);
}

TEST_CASE("sdk: one client serves many threads at once", "[client][redis]") {
  ServiceUnderTest s;
  Client client = client_for(s);
  std::mutex mutex;
  std::set<std::uint64_t> tokens;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto lease = client.acquire("t" + std::to_string(t), 5s);
        REQUIRE(lease.ok());
        auto token = client.next_token("shared");
        REQUIRE(token.ok());
        REQUIRE(client.release(lease.value()).value());
        std::lock_guard<std::mutex> lock(mutex);
        tokens.insert(token.value());
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(tokens.size() == 400);
}

TEST_CASE("sdk: a lock guard releases when it goes out of scope", "[client][redis]") {
  ServiceUnderTest s;
  Client client = client_for(s);
  {
    LockGuard guard(client, client.acquire("scoped", 10s).value());
    CHECK(client.status("scoped")->held);
    LockGuard moved(std::move(guard));  // only the new owner releases
  }
  CHECK_FALSE(client.status("scoped")->held);

  SECTION("a failed release is reported, not thrown") {
    std::string reported;
    {
      LockGuard guard(client, client.acquire("orphan", 10s).value(),
                      [&](const Lease& lease, const Error& error) {
                        reported = lease.name() + ": " + std::string(error_code_name(error.code));
                      });
      s.daemon->stop(SIGKILL);
    }
    CHECK(reported == "orphan: transport");
  }
}

TEST_CASE("sdk: auto-renew keeps a lease alive for five times its ttl", "[client][redis]") {
  ServiceUnderTest s;
  Client client = client_for(s);
  auto lease = client.acquire("long-job", 400ms);
  REQUIRE(lease.ok());
  const auto token = lease->token();
  {
    LeaseKeeper keeper(client, std::move(lease).value());
    const auto end = Clock::now() + 2000ms;
    while (Clock::now() < end) {
      REQUIRE_FALSE(keeper.lost());
      CHECK(Clock::now() < keeper.deadline());
      auto status = client.status("long-job");
      REQUIRE(status.ok());
      CHECK(status->held);
      std::this_thread::sleep_for(50ms);
    }
    CHECK(keeper.renewals() >= 5);
    CHECK(keeper.token() == token);  // extends keep the token
    CHECK(client.acquire("long-job", 400ms).error().code == ErrorCode::kLocked);
  }
  CHECK_FALSE(client.status("long-job")->held);  // released when the keeper ended
}

TEST_CASE("sdk: the lost-lease signal fires before the deadline when the lock nodes die",
          "[client][redis]") {
  ServiceUnderTest s;
  ClientOptions options;
  options.request_timeout = 2s;
  Client client = client_for(s, options);
  LeaseKeeper keeper(client, client.acquire("fragile", 600ms).value());
  std::atomic<Clock::rep> fired_at{0};
  std::stop_callback on_lost(keeper.lost_token(),
                             [&] { fired_at = Clock::now().time_since_epoch().count(); });

  std::this_thread::sleep_for(100ms);
  for (std::size_t i = 0; i < 3; ++i) s.cluster.node(i).kill();
  const auto limit = Clock::now() + 3s;
  while (!keeper.lost() && Clock::now() < limit) std::this_thread::sleep_for(5ms);
  REQUIRE(keeper.lost());
  const Clock::time_point fired{Clock::duration(fired_at.load())};
  CHECK(fired < keeper.deadline());  // before the lease could have expired
  REQUIRE(keeper.lost_reason().has_value());
}

TEST_CASE("sdk: a renewal bound lets the lease run out, signalled before it does",
          "[client][redis]") {
  ServiceUnderTest s;
  Client client = client_for(s);
  RenewOptions renew;
  renew.max_renewals = 2;
  LeaseKeeper keeper(client, client.acquire("bounded", 300ms).value(), renew);
  const auto limit = Clock::now() + 3s;
  while (!keeper.lost() && Clock::now() < limit) std::this_thread::sleep_for(5ms);
  REQUIRE(keeper.lost());
  CHECK(Clock::now() < keeper.deadline());
  CHECK(keeper.renewals() == 2);
}

TEST_CASE("sdk: with_lease runs work under a renewed lease and reports a loss", "[client][redis]") {
  ServiceUnderTest s;
  Client client = client_for(s);
  std::uint64_t token = 0;
  auto done = with_lease(client, "job", 300ms, 0ms, [&](LeaseKeeper& keeper) {
    token = keeper.token();
    std::this_thread::sleep_for(700ms);
  });
  CHECK(done.ok());
  CHECK(token >= 1);
  CHECK_FALSE(client.status("job")->held);

  auto lost = with_lease(client, "job", 300ms, 0ms, [&](LeaseKeeper& keeper) {
    for (std::size_t i = 0; i < 3; ++i) s.cluster.node(i).kill();
    while (!keeper.lost()) std::this_thread::sleep_for(5ms);
  });
  CHECK(lost.error().code == ErrorCode::kNotHeld);
}

namespace {

// Answers one HTTP request on 127.0.0.1 with `reply_body` (200, JSON) and keeps the request's
// head. Bounded: gives up after 10 s without a connection or a complete head.
class OneRequestServer {
 public:
  explicit OneRequestServer(std::string reply_body) : reply_body_(std::move(reply_body)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        ::listen(listener_, 4) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0)
      throw std::runtime_error("cannot listen on 127.0.0.1");
    port_ = ntohs(address.sin_port);
    server_ = std::thread([this] { serve(); });
  }
  ~OneRequestServer() {
    server_.join();
    ::close(listener_);
  }
  OneRequestServer(const OneRequestServer&) = delete;
  OneRequestServer& operator=(const OneRequestServer&) = delete;

  std::uint16_t port() const { return port_; }
  // The request head; valid after the client had its answer.
  std::string request() {
    std::lock_guard<std::mutex> lock(mutex_);
    return request_;
  }

 private:
  void serve() {
    pollfd waiting{listener_, POLLIN, 0};
    if (::poll(&waiting, 1, 10'000) != 1) return;
    const int connection = ::accept(listener_, nullptr, nullptr);
    if (connection < 0) return;
    const timeval limit{10, 0};
    ::setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    std::string head;
    char buffer[1024];
    while (head.find("\r\n\r\n") == std::string::npos && head.size() < 65536) {
      const ssize_t n = ::recv(connection, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      head.append(buffer, static_cast<std::size_t>(n));
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      request_ = head;
    }
    const std::string reply =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
        std::to_string(reply_body_.size()) + "\r\nConnection: close\r\n\r\n" + reply_body_;
    (void)::send(connection, reply.data(), reply.size(), MSG_NOSIGNAL);
    ::close(connection);
  }

  std::string reply_body_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::thread server_;
  std::mutex mutex_;
  std::string request_;
};

}  // namespace

TEST_CASE("sdk: an endpoint by name is resolved, and Host carries the name and the port",
          "[client]") {
  const std::string host = GENERATE(as<std::string>{}, "localhost", "127.0.0.1");
  OneRequestServer server(R"({"name":"named","token":5})");
  ClientOptions options;
  options.endpoints = {"http://" + host + ":" + std::to_string(server.port())};
  auto client = Client::create(options);
  REQUIRE(client.ok());
  CHECK(client->current_token("named").value() == 5);
  CHECK_THAT(server.request(),
             Catch::Contains("\r\nHost: " + host + ":" + std::to_string(server.port()) + "\r\n"));
}

TEST_CASE("sdk: a name that does not resolve is a transport error, and the next endpoint is tried",
          "[client][redis]") {
  ServiceUnderTest s;
  const std::string unknown = "http://no-such-host.invalid:" + std::to_string(s.port());
  ClientOptions options;
  options.connect_timeout = 2s;
  options.max_retries = 0;
  options.endpoints = {unknown};
  auto alone = Client::create(options);
  REQUIRE(alone.ok());  // names are accepted: DNS may know them later
  const auto started = Clock::now();
  const auto failed = alone->status("named");
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().code == ErrorCode::kTransport);
  CHECK_THAT(failed.error().message, Catch::Contains("no-such-host.invalid"));
  CHECK(Clock::now() - started < 5s);  // "cannot resolve …", or "resolving … timed out" at most

  options.max_retries = 1;
  options.endpoints = {unknown, "http://localhost:" + std::to_string(s.port())};
  auto failing_over = Client::create(options);
  REQUIRE(failing_over.ok());
  auto lease = failing_over->acquire("named", 10s);  // nothing was sent to the first: retried
  REQUIRE(lease.ok());
  CHECK(failing_over->release(lease.value()).value());
}

// #35 item 5: one name for each setting — the CLI's variables, read by the SDK on request.
TEST_CASE("sdk: ClientOptions::from_environment reads the CLI's variables", "[client]") {
  const auto set = [](const char* name, const char* value) {
    if (value == nullptr) {
      ::unsetenv(name);
    } else {
      ::setenv(name, value, 1);
    }
  };
  set("FENCELOCK_ENDPOINT", "https://a.example:8443,https://b.example:8443");
  set("FENCELOCK_API_KEY", "k3y");
  set("FENCELOCK_CACERT", "/etc/fencelock/ca.pem");
  auto options = fencelock::ClientOptions::from_environment();
  CHECK(options.endpoints ==
        std::vector<std::string>{"https://a.example:8443", "https://b.example:8443"});
  CHECK(options.api_key == "k3y");
  CHECK(options.ca_file == "/etc/fencelock/ca.pem");
  for (const char* name : {"FENCELOCK_ENDPOINT", "FENCELOCK_API_KEY", "FENCELOCK_CACERT"})
    set(name, nullptr);
  options = fencelock::ClientOptions::from_environment();
  CHECK(options.endpoints == std::vector<std::string>{"http://127.0.0.1:8080"});
  CHECK(options.api_key.empty());
  CHECK(options.ca_file.empty());
}
