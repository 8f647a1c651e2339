// fencelockd over TLS against real clients on loopback, with real redis-servers and certificates
// made by the openssl CLI at test time: who is let in (CA, protocol version, client certificates),
// what happens to clients that do not speak TLS or do not finish the handshake, certificate reload
// on SIGHUP, the connection caps and the disconnect watch over TLS, and refusals at startup.
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "child_process.h"
#include "fencelockd_process.h"
#include "http_client.h"
#include "loopback.h"
#include "prometheus_text.h"
#include "redis_server.h"
#include "service_under_test.h"
#include "sync_redis.h"
#include "tls_service_under_test.h"

using namespace fencelock::testing;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// What a raw TCP client gets back before the server closes or `limit` passes: the bytes, whether
// the server closed (EOF or reset), and how long that took.
struct RawOutcome {
  std::string bytes;
  bool closed = false;
  std::chrono::steady_clock::duration after{};
};

RawOutcome send_raw(std::uint16_t port, const std::string& bytes, std::chrono::seconds limit) {
  RawOutcome outcome;
  const int fd = connect_loopback(port);
  REQUIRE(fd >= 0);
  const timeval tv{static_cast<time_t>(limit.count()), 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const auto started = std::chrono::steady_clock::now();
  if (!bytes.empty()) REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) > 0);
  char buffer[4096];
  for (int reads = 0; reads < 1000; ++reads) {  // bounded: each read waits at most `limit`
    const ssize_t got = ::recv(fd, buffer, sizeof buffer, 0);
    if (got > 0) {
      outcome.bytes.append(buffer, static_cast<std::size_t>(got));
      continue;
    }
    outcome.closed = got == 0 || errno == ECONNRESET;
    break;
  }
  outcome.after = std::chrono::steady_clock::now() - started;
  ::close(fd);
  return outcome;
}

// After this long a reload counts as stuck: a SIGHUP then logs reload_still_running
// (SighupReloader::kStillRunningAfter in fencelockd).
constexpr auto kReloadStillRunningAfter = 2s;

double handshake_failures(TlsServiceUnderTest& s) {
  const Exposition metrics = parse(s.client().get("/metrics").body);
  REQUIRE(metrics.errors.empty());
  return metrics.value("fencelock_tls_handshake_failures_total");
}

}  // namespace

TEST_CASE("https: a client trusting the CA is served — lock, read, release", "[service][redis]") {
  TlsServiceUnderTest s;
  TlsClient client = s.client();
  REQUIRE(client.connect().empty());
  CHECK(client.peer_serial() == TestCerts::kServerSerial);
  const HttpAnswer granted = client.post("/v1/locks/tls-a", {{"ttl_ms", 30000}});
  REQUIRE(granted.status == 200);
  CHECK(client.get("/v1/locks/tls-a").json()["held"] == true);
  CHECK(client.del("/v1/locks/tls-a", {{"lease", granted.json()["lease"]}}).json()["released"] ==
        true);
  CHECK_THAT(s.daemon->log(), Catch::Contains("scheme=https"));
  CHECK_THAT(s.daemon->log(), Catch::Contains("tls_loaded"));
}

TEST_CASE("https: a client trusting another CA refuses the server, and nothing changes",
          "[service][redis]") {
  TlsServiceUnderTest s;
  TlsClientOptions options;
  options.ca = s.certs.wrong_ca;
  TlsClient stranger(s.port(), options);
  CHECK_THAT(stranger.connect(), Catch::Contains("certificate verify failed"));
  CHECK(stranger.post("/v1/locks/tls-b", {{"ttl_ms", 30000}}).status == 0);
  std::int64_t keys = 0;
  for (std::size_t i = 0; i < s.cluster.size(); ++i)
    keys += SyncRedis(s.cluster.node(i).port()).count_keys();
  CHECK(keys == 0);
  CHECK(s.client().get("/v1/locks/tls-b").json()["last_token"] == 0);
}

TEST_CASE(
    "https: plain HTTP on the TLS port is answered 400 plain_http_on_tls_port and closed, and TLS "
    "clients carry on",
    "[service][redis]") {
  TlsServiceUnderTest s;
  const double failures_before = handshake_failures(s);
  const RawOutcome plain =
      send_raw(s.port(), "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 5s);
  CHECK(plain.closed);
  CHECK(plain.after < 3s);
  // Was: nothing at all, and the client could only guess ("empty reply", "end of stream").
  REQUIRE(plain.bytes.starts_with("HTTP/1.1 400 "));
  const std::string body = plain.bytes.substr(plain.bytes.find("\r\n\r\n") + 4);
  CHECK(json::parse(body)["error"]["code"] == "plain_http_on_tls_port");
  CHECK_THAT(body, Catch::Contains("use https://"));
  const HttpAnswer answer = HttpClient(s.port(), 2s).post("/v1/locks/plain", {{"ttl_ms", 1000}});
  CHECK(answer.status == 400);
  CHECK(answer.json()["error"]["code"] == "plain_http_on_tls_port");
  CHECK(answer.header("x-request-id").size() == 16);  // like every answer (docs/openapi.yaml)
  CHECK(s.daemon->log_shows("tls_handshake_failed peer=127.0.0.1 reason=\"http request"));
  CHECK(s.client().get("/healthz").status == 200);
  CHECK(handshake_failures(s) >= failures_before + 2);
  CHECK(s.client().get("/v1/locks/plain").json()["last_token"] == 0);
}

TEST_CASE("https: bytes that are neither TLS nor HTTP get no answer on the TLS port",
          "[service][redis]") {
  TlsServiceUnderTest s;
  const RawOutcome garbage = send_raw(s.port(), std::string(64, '\x01'), 5s);
  CHECK(garbage.closed);
  CHECK(garbage.bytes.find("HTTP/") == std::string::npos);
  CHECK(s.client().get("/healthz").status == 200);
}

TEST_CASE("https: a client that offers nothing newer than TLS 1.1 is refused", "[service][redis]") {
  const int version = GENERATE(TLS1_1_VERSION, TLS1_VERSION);
  TlsServiceUnderTest s;
  TlsClientOptions options = s.trusting();
  options.max_version = version;
  TlsClient old(s.port(), options);
  CHECK_FALSE(old.connect().empty());
  CHECK(s.daemon->log_shows("reason=\"unsupported protocol"));
  CHECK(s.client().get("/healthz").status == 200);
}

TEST_CASE("mtls: with --tls-client-ca only clients with a certificate from that CA are served",
          "[service][redis]") {
  TlsServiceUnderTest s({}, true);
  SECTION("a certificate from the CA") {
    TlsClient client = s.client(true);
    CHECK(client.post("/v1/locks/mtls", {{"ttl_ms", 1000}}).status == 200);
    // The request log names the certificate (TLS review F11): with mTLS and no API keys it is the
    // caller's only identity.
    CHECK(s.daemon->log_shows("route=acquire name=mtls status=200"));
    CHECK(s.daemon->log_shows("client=\"/CN=fencelock test client\""));
  }
  SECTION("no certificate") {
    TlsClient client = s.client(false);
    // TLS 1.3: the client's handshake ends before the server checks; the server's refusal ends the
    // connection before any answer.
    CHECK(client.post("/v1/locks/mtls", {{"ttl_ms", 1000}}).status == 0);
    CHECK(s.daemon->log_shows("reason=\"peer did not return a certificate"));
  }
  SECTION("a certificate from another CA") {
    TlsClientOptions options = s.trusting();
    options.cert = s.certs.wrong_client.cert;
    options.key = s.certs.wrong_client.key;
    TlsClient client(s.port(), options);
    CHECK(client.post("/v1/locks/mtls", {{"ttl_ms", 1000}}).status == 0);
    CHECK(s.daemon->log_shows("reason=\"certificate verify failed"));
    // Which certificate and why (TLS review F11): "renew it" told apart from "wrong CA".
    CHECK(s.daemon->log_shows("verify=\"unable to get local issuer certificate\""));
    CHECK(s.daemon->log_shows("client=\"/CN=fencelock test client\""));
  }
  TlsClient check = s.client(true);
  CHECK(check.get("/v1/locks/mtls").status == 200);
}

TEST_CASE(
    "https: SIGHUP serves a new certificate to new connections — open ones keep theirs, and a bad "
    "file keeps the one in force",
    "[service][redis]") {
  TlsServiceUnderTest s;
  TlsClient kept = s.client();
  REQUIRE(kept.get("/healthz").status == 200);
  REQUIRE(kept.peer_serial() == TestCerts::kServerSerial);

  constexpr long kNextSerial = 0x2002;
  const CertFiles next = s.certs.issue_server("next", "fencelock reloaded", kNextSerial);
  s.reload_with(next);
  REQUIRE(s.daemon->log_shows("tls_reloaded"));
  TlsClient fresh = s.client();
  REQUIRE(fresh.connect().empty());
  CHECK(fresh.peer_serial() == kNextSerial);
  CHECK_THAT(fresh.peer_subject(), Catch::Contains("fencelock reloaded"));
  // The connection opened before the reload still works, on the certificate it began with.
  CHECK(kept.get("/healthz").status == 200);
  CHECK(kept.peer_serial() == TestCerts::kServerSerial);

  SECTION("a file that is not a certificate") {
    std::ofstream(s.live_cert) << "not a certificate\n";
    ::kill(s.daemon->pid(), SIGHUP);
    CHECK(s.daemon->log_shows("tls_reload_rejected"));
    CHECK_THAT(s.daemon->log(), Catch::Contains("cannot load the certificate"));
  }
  SECTION("a key that does not match the certificate") {
    replace_file(s.live_key, s.certs.client.key);
    ::kill(s.daemon->pid(), SIGHUP);
    CHECK(s.daemon->log_shows("tls_reload_rejected"));
    CHECK_THAT(s.daemon->log(), Catch::Contains("does not match the certificate"));
  }
  SECTION("a certificate that has expired") {
    const CertFiles expired =
        s.certs.issue_server("expired", "fencelock expired", 0x2003, true, -1);
    s.reload_with(expired);
    CHECK(s.daemon->log_shows("tls_reload_rejected"));
    CHECK_THAT(s.daemon->log(), Catch::Contains("the certificate expired on"));
  }
  TlsClient after = s.client();
  REQUIRE(after.connect().empty());
  CHECK(after.peer_serial() == kNextSerial);
  CHECK(after.get("/healthz").status == 200);
  CHECK(s.daemon->running());
}

TEST_CASE("https: a connection that never sends its handshake is closed at the request timeout",
          "[service][redis]") {
  TlsServiceUnderTest s({"--request-timeout", "1s"});  // the idle timeout stays at 60 s
  const RawOutcome silent = send_raw(s.port(), "", 10s);
  CHECK(silent.closed);
  CHECK(silent.bytes.empty());
  CHECK(silent.after >= 900ms);
  CHECK(silent.after < 5s);
  CHECK(s.daemon->log_shows("reason=\"timed out\""));
  CHECK(s.client().get("/healthz").status == 200);
}

TEST_CASE("https: a waiting acquire whose TLS client went away is cancelled, never granted",
          "[service][redis]") {
  const bool notify = GENERATE(true, false);  // with a TLS close_notify, or by closing the socket
  TlsServiceUnderTest s;
  TlsClient holder = s.client();
  const json held = holder.post("/v1/locks/gone", {{"ttl_ms", 60000}}).json();
  REQUIRE(held.contains("lease"));

  TlsClient waiter = s.client();
  REQUIRE(waiter.connect().empty());
  const std::string body = R"({"ttl_ms": 30000, "wait_ms": 10000})";
  REQUIRE(waiter.send(
      "POST /v1/locks/gone HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body));
  std::this_thread::sleep_for(500ms);  // the acquire is waiting on the held lock
  waiter.close(notify);
  CHECK(s.daemon->log_shows("route=acquire name=gone status=499"));

  REQUIRE(holder.del("/v1/locks/gone", {{"lease", held["lease"]}}).json()["released"] == true);
  std::this_thread::sleep_for(300ms);
  CHECK(holder.get("/v1/locks/gone").json()["held"] == false);  // nobody holds a lost lease
  CHECK(holder.post("/v1/locks/gone", {{"ttl_ms", 1000}}).status == 200);
}

TEST_CASE("https: a waiting acquire over TLS is answered when the lock frees up",
          "[service][redis]") {
  TlsServiceUnderTest s;
  TlsClient holder = s.client();
  const json held = holder.post("/v1/locks/queued", {{"ttl_ms", 60000}}).json();
  REQUIRE(held.contains("lease"));
  HttpAnswer waited;
  std::thread waiter([&] {
    TlsClient client = s.client();
    waited = client.post("/v1/locks/queued", {{"ttl_ms", 1000}, {"wait_ms", 10000}});
    // The same connection goes on serving after the watched request.
    if (waited.status == 200) waited.status = client.get("/healthz").status == 200 ? 200 : 0;
  });
  std::this_thread::sleep_for(300ms);
  REQUIRE(holder.del("/v1/locks/queued", {{"lease", held["lease"]}}).json()["released"] == true);
  waiter.join();
  CHECK(waited.status == 200);
}

TEST_CASE("https: a client over the per-address cap is closed at once, without a handshake",
          "[service][redis]") {
  TlsServiceUnderTest s({"--max-connections-per-client", "1"});
  // The fixture's readiness probe must have left first: until then, this one is refused too.
  std::optional<TlsClient> first;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    first.emplace(s.port(), s.trusting());
    if (first->get("/healthz").status == 200) break;  // holds the address's one connection
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(50ms);
  }
  // A refused connection is not counted against the caps, so it holds no descriptor: no
  // handshake, nothing written, closed as soon as it is accepted.
  const RawOutcome refused = send_raw(s.port(), "", 5s);
  CHECK(refused.closed);
  CHECK(refused.bytes.empty());
  CHECK(refused.after < 1s);
  TlsClient second = s.client();
  CHECK_FALSE(second.connect().empty());
  CHECK(first->get("/healthz").status == 200);
  const Exposition metrics = parse(first->get("/metrics").body);
  CHECK(metrics.value("fencelock_http_connections_refused_total") >= 2);
}

namespace {

std::size_t open_descriptors(pid_t pid) {
  std::size_t count = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", ec), end;
       !ec && it != end; it.increment(ec)) {
    ++count;
  }
  return count;
}

}  // namespace

TEST_CASE(
    "https: one address holds no more descriptors than its cap with connections that never "
    "handshake, probes from elsewhere answer at once, and failed handshakes do not flood the log",
    "[service][redis]") {
  constexpr std::size_t kCap = 4;
  constexpr std::size_t kSilent = 200;
  TlsServiceUnderTest s({"--max-connections-per-client", std::to_string(kCap)});
  const pid_t pid = s.daemon->pid();
  std::this_thread::sleep_for(100ms);  // the readiness probe's connection has gone
  const std::size_t before = open_descriptors(pid);

  std::vector<int> silent;  // connect and never send a byte, from 127.0.0.1
  for (std::size_t i = 0; i < kSilent; ++i) {
    const int fd = connect_loopback(s.port());
    REQUIRE(fd >= 0);
    silent.push_back(fd);
  }
  std::this_thread::sleep_for(500ms);  // all accepted: the refused ones closed
  const std::size_t during = open_descriptors(pid);
  CHECK(during <= before + kCap + 4);  // was before + kSilent: refused ones held theirs for 10 s

  // Another address is not locked out: a probe over TLS answers promptly.
  TlsClientOptions elsewhere = s.trusting();
  elsewhere.source_host = 2;
  elsewhere.timeout = 2s;
  const auto asked = std::chrono::steady_clock::now();
  TlsClient probe(s.port(), elsewhere);
  CHECK(probe.get("/healthz").status == 200);
  CHECK(std::chrono::steady_clock::now() - asked < 1s);
  const Exposition metrics = parse(probe.get("/metrics").body);
  CHECK(metrics.value("fencelock_http_connections_refused_total") >= kSilent - kCap);

  std::size_t closed_by_server = 0;
  for (const int fd : silent) {
    char byte = 0;
    if (::recv(fd, &byte, 1, MSG_DONTWAIT) == 0) ++closed_by_server;
    ::close(fd);
  }
  CHECK(closed_by_server >= kSilent - kCap);

  // 40 plain-HTTP requests to the TLS port, each a failed handshake: all counted, few logged.
  const double failures_before = metrics.value("fencelock_tls_handshake_failures_total");
  const auto burst = std::chrono::steady_clock::now();
  for (int i = 0; i < 40; ++i) {
    const int fd = connect_loopback(s.port(), false, 3);
    REQUIRE(fd >= 0);
    const std::string plain = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    REQUIRE(::send(fd, plain.data(), plain.size(), MSG_NOSIGNAL) > 0);
    const timeval tv{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string answer;
    char buffer[512];
    for (int reads = 0; reads < 100; ++reads) {  // bounded: each waits 2 s at most
      const ssize_t got = ::recv(fd, buffer, sizeof buffer, 0);
      if (got <= 0) break;
      answer.append(buffer, static_cast<std::size_t>(got));
    }
    CHECK(answer.starts_with("HTTP/1.1 400 "));  // then closed
    ::close(fd);
  }
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - burst)
          .count();
  std::this_thread::sleep_for(100ms);
  const Exposition after = parse(probe.get("/metrics").body);
  CHECK(after.value("fencelock_tls_handshake_failures_total") >= failures_before + 40);
  std::size_t lines = 0;
  const std::string log = s.daemon->log();
  for (std::size_t at = log.find("peer=127.0.0.3"); at != std::string::npos;
       at = log.find("peer=127.0.0.3", at + 1)) {
    ++lines;
  }
  CHECK(lines <= static_cast<std::size_t>(5 * (seconds + 2)));
  CHECK(lines < 40);
}

TEST_CASE("fencelockd does not start with TLS files it cannot use, and says which and why",
          "[service]") {
  TempDir dir;
  const TestCerts certs(dir.path());
  const std::string garbage = (dir.path() / "garbage.pem").string();
  std::ofstream(garbage) << "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n";
  std::vector<std::string> args = {"--redis", "127.0.0.1:1", "--tokens",
                                   "sqlite:" + (dir.path() / "t.db").string()};
  std::string expected;
  SECTION("a key that does not match the certificate") {
    args.insert(args.end(),
                {"--tls-cert", certs.server.cert.string(), "--tls-key", certs.client.key.string()});
    expected = "--tls-key '" + certs.client.key.string() +
               "' does not match the certificate in --tls-cert";
  }
  SECTION("a certificate file that holds no certificate") {
    args.insert(args.end(), {"--tls-cert", garbage, "--tls-key", certs.server.key.string()});
    expected = "--tls-cert '" + garbage + "': cannot load the certificate";
  }
  SECTION("a key file that is not there") {
    const std::string missing = (dir.path() / "missing.key").string();
    args.insert(args.end(), {"--tls-cert", certs.server.cert.string(), "--tls-key", missing});
    expected = "--tls-key '" + missing + "': cannot read: No such file or directory";
  }
  SECTION("a client CA file that holds no certificate") {
    args.insert(args.end(), {"--tls-cert", certs.server.cert.string(), "--tls-key",
                             certs.server.key.string(), "--tls-client-ca", garbage});
    expected = "--tls-client-ca '" + garbage + "': holds no CA certificate";
  }
  SECTION("a certificate without its key") {
    args.insert(args.end(), {"--tls-cert", certs.server.cert.string()});
    const FinishedRun usage = run_fencelockd(dir.path(), args);
    CHECK(usage.exit_code == 2);
    CHECK_THAT(usage.output, Catch::Contains("--tls-cert: needs --tls-key (both or neither)"));
    return;
  }
  const FinishedRun run = run_fencelockd(dir.path(), args);
  CHECK(run.exit_code == 1);
  CHECK_THAT(run.output, Catch::Contains(expected));
  CHECK(run.output.find("BEGIN") == std::string::npos);  // file contents never reach the log
}

TEST_CASE("sighup: a fencelockd without TLS or --auth-file keeps serving and says so",
          "[service][redis]") {
  ServiceUnderTest s;
  ::kill(s.daemon->pid(), SIGHUP);
  CHECK(s.daemon->log_shows("reload_skipped"));
  CHECK(s.client().get("/healthz").status == 200);
  ::kill(s.daemon->pid(), SIGHUP);
  CHECK(s.client().get("/healthz").status == 200);
  CHECK(s.daemon->stop(SIGTERM) == 0);  // not 129, "Hangup"
}

TEST_CASE("sighup: during the start it does not stop fencelockd, and is applied once it serves",
          "[service][redis]") {
  RedisCluster cluster{3};
  TempDir dir;
  const TestCerts certs(dir.path());
  const auto log_path = dir.path() / "starting.log";
  const std::uint16_t port = pick_free_port();
  ChildProcess daemon;
  daemon.start({fencelockd_binary(), "--listen", "127.0.0.1:" + std::to_string(port), "--redis",
                join_addresses(cluster.addresses()), "--tokens",
                "sqlite:" + (dir.path() / "tokens.db").string(), "--tls-cert",
                certs.server.cert.string(), "--tls-key", certs.server.key.string()},
               log_path);
  auto log = [&] {
    std::ifstream in(log_path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  std::optional<int> exited;
  auto wait_for = [&](const std::string& text) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (log().find(text) == std::string::npos) {
      if (!exited) exited = daemon.poll_exit();
      if (exited || std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(1ms);
    }
    return true;
  };
  REQUIRE(wait_for(" starting "));
  daemon.signal(SIGHUP);  // before the certificate is read, the lock nodes reached, the port open
  CHECK(wait_for(" listening "));
  CHECK(wait_for("tls_reloaded"));  // the SIGHUP was remembered
  if (!exited) exited = daemon.poll_exit();
  REQUIRE_FALSE(exited.has_value());  // was 129: killed by SIGHUP before the reloader existed
  TlsClientOptions options;
  options.ca = certs.ca;
  CHECK(TlsClient(port, options).get("/healthz").status == 200);
  CHECK(daemon.stop(SIGTERM, 10s) == 0);
}

TEST_CASE(
    "sighup: a reload stuck on a certificate file that never answers (a FIFO) does not hold up "
    "SIGTERM",
    "[service][redis]") {
  TlsServiceUnderTest s({"--threads", "1"});
  std::filesystem::remove(s.live_cert);
  REQUIRE(::mkfifo(s.live_cert.c_str(), 0600) == 0);  // opening it blocks until a writer comes
  ::kill(s.daemon->pid(), SIGHUP);
  std::this_thread::sleep_for(kReloadStillRunningAfter + 200ms);
  ::kill(s.daemon->pid(), SIGHUP);
  CHECK(s.daemon->log_shows("reload_still_running"));  // the first reload is stuck
  CHECK(s.client().get("/healthz").status == 200);     // and the event loop is not
  const auto asked = std::chrono::steady_clock::now();
  CHECK(s.daemon->stop(SIGTERM, 8s) == 0);  // was: never, the event loop joined the reload thread
  CHECK(std::chrono::steady_clock::now() - asked < 5s);
  CHECK_THAT(s.daemon->log(), Catch::Contains("reload_abandoned"));
  CHECK_THAT(s.daemon->log(), Catch::Contains(" stopped"));
}

TEST_CASE("https: a certificate that has expired is served at start, with a warning that says so",
          "[service][redis]") {
  RedisCluster cluster{3};
  TempDir dir;
  const TestCerts certs(dir.path());
  const CertFiles expired = certs.issue_server("expired", "fencelock expired", 0x2004, true, -1);
  Fencelockd daemon(dir.path(), {"--redis", join_addresses(cluster.addresses()), "--tokens",
                                 "sqlite:" + (dir.path() / "tokens.db").string(), "--tls-cert",
                                 expired.cert.string(), "--tls-key", expired.key.string()});
  CHECK(daemon.log_shows("warning tls_loaded"));
  CHECK_THAT(daemon.log(), Catch::Contains("problem=\"the certificate expired on"));
}
