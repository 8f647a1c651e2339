// The HTTP layer's limits hold against what a hostile client or a web page sends (issue #33),
// against the real fencelockd over loopback with real redis-servers: every byte counts against a
// limit before it is buffered, an unauthenticated request costs no body memory, connections that
// say nothing never keep probes out, browsers are kept out of an open fencelockd, and every
// refused request's log line names the key.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "auth/api_secret.h"
#include "fencelockd_process.h"
#include "raw_socket.h"
#include "redis_cluster.h"
#include "service_under_test.h"
#include "sync_redis.h"
#include "temp_dir.h"

using namespace fencelock::testing;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

std::int64_t locks_on_nodes(ServiceUnderTest& service) {
  std::int64_t total = 0;
  for (std::size_t i = 0; i < service.cluster.size(); ++i)
    total += SyncRedis(service.cluster.node(i).port()).count_keys("fencelock:lock:*");
  return total;
}

const std::string kChunkedHead =
    "POST /v1/locks/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    "Transfer-Encoding: chunked\r\n\r\n";

// Sends `head`, then `filler` over and over (at most `budget` bytes, at most 20 s) until the
// server stops reading and closes. Returns what the server answered.
std::string flood(std::uint16_t port, const std::string& head, char filler, std::size_t budget) {
  RawSocket socket(port);
  REQUIRE(socket.ok());
  socket.send(head);
  const std::string block(64 * 1024, filler);
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  for (std::size_t sent = 0; sent < budget && std::chrono::steady_clock::now() < deadline;
       sent += block.size()) {
    if (!socket.send(block)) break;
  }
  return socket.read_until_closed(3s);
}

struct Key {
  std::string id;
  std::string secret;
};

// An auth file with the keys `billing` (lock and read on billing.*) and `reader` (read on *).
struct KeyFile {
  TempDir dir;
  std::filesystem::path path = dir.path() / "keys.json";
  Key billing{"billing", "flk_" + fencelock::service::sha256_hex("billing secret")};
  Key reader{"reader", "flk_" + fencelock::service::sha256_hex("reader secret")};
  KeyFile() {
    auto entry = [](const Key& key, json names, json rights) {
      return json{{"id", key.id},
                  {"secret_sha256", fencelock::service::sha256_hex(key.secret)},
                  {"names", std::move(names)},
                  {"rights", std::move(rights)}};
    };
    std::ofstream(path) << json{{"keys",
                                 {entry(billing, {"billing.*"}, {"lock", "read"}),
                                  entry(reader, {"*"}, {"read"})}}}
                               .dump();
  }
};

std::map<std::string, std::string> bearer(const Key& key) {
  return {{"Authorization", "Bearer " + key.secret}};
}

}  // namespace

TEST_CASE("hardening: no chunked framing grows memory past the framing limit",
          "[service][redis][hostile]") {
  ServiceUnderTest service;
  const pid_t pid = service.daemon->pid();
  HttpClient http = service.client();
  const HttpAnswer warm = http.post("/v1/locks/warm", {{"ttl_ms", 1000}});  // every path in use
  REQUIRE(warm.status == 200);
  REQUIRE(http.del("/v1/locks/warm", {{"lease", warm.json()["lease"]}}).status == 200);
  const std::int64_t peak_before = peak_resident_kib(pid);
  constexpr std::size_t kBudget = std::size_t{48} * 1024 * 1024;  // per connection
  const auto [what, head, filler] = GENERATE(table<const char*, std::string, char>({
      {"a chunk extension that never ends", kChunkedHead + "1;", 'e'},
      {"a chunk size of endless zeros", kChunkedHead, '0'},
      {"a trailer field that never ends", kChunkedHead + "5\r\nhello\r\n0\r\nX-Trailer: ", 't'},
      {"a chunk-size line that never ends", kChunkedHead + "1 ", ' '},
  }));
  INFO(what);
  const std::string answer = flood(service.port(), head, filler, kBudget);
  const unsigned status = first_status(answer);
  INFO("answer: " << answer.substr(0, 300));
  CHECK((status == 400 || status == 413 || status == 0));
  // Each connection may buffer header limit + body limit + slack (~76 KiB); with the framing
  // unbounded a single one held the whole flood (48 MiB).
  CHECK(peak_resident_kib(pid) - peak_before < 16 * 1024);
  CHECK(locks_on_nodes(service) == 0);
  CHECK(service.client().get("/healthz").status == 200);
}

TEST_CASE("hardening: an unauthenticated request reserves no body memory and reads no body",
          "[service][redis][hostile]") {
  KeyFile keys;
  ServiceUnderTest service({"--auth-file", keys.path.string(), "--body-memory", "1048576",
                            "--body-limit", "65536", "--request-timeout", "10s"});
  // 40 connections announce a 64 KiB body each (2.5 MiB: more than the budget) and send nothing:
  // without a key each is answered 401 at once, holding nothing.
  std::vector<std::unique_ptr<RawSocket>> announcers;
  for (int i = 0; i < 40; ++i) {
    announcers.push_back(std::make_unique<RawSocket>(service.port(), 2 + i % 2));
    REQUIRE(announcers.back()->ok());
    announcers.back()->send(
        "POST /v1/locks/billing.x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Content-Length: 65536\r\n\r\n");
  }
  for (auto& socket : announcers) {
    const std::string answer = socket->read_until_closed(2s);
    CHECK(first_status(answer) == 401);
    CHECK(socket->closed());
  }
  // A key without the right, or asking for a name outside its patterns: refused on the head too.
  RawSocket forbidden(service.port());
  forbidden.send("POST /v1/locks/billing.x HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
                 keys.reader.secret +
                 "\r\nContent-Type: application/json\r\nContent-Length: 65536\r\n\r\n");
  CHECK(first_status(forbidden.read_until_closed(2s)) == 403);
  // The budget is untouched: a valid key's acquire is served.
  HttpClient http = service.client();
  const HttpAnswer granted =
      http.request("POST", "/v1/locks/billing.x", R"({"ttl_ms":1000})", bearer(keys.billing));
  CHECK(granted.status == 200);
  const std::string metrics = http.request("GET", "/metrics", "", bearer(keys.reader)).body;
  CHECK_THAT(metrics, Catch::Contains("fencelock_http_body_bytes_reserved 0"));
}

TEST_CASE("hardening: connections that say nothing never keep probes out",
          "[service][redis][hostile]") {
  ServiceUnderTest service({"--max-connections", "20"});
  auto probe = [&] {
    RawSocket socket(service.port(), 9);
    socket.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    return first_status(socket.read_until_closed(2s));
  };
  std::vector<std::unique_ptr<RawSocket>> silent;
  for (int i = 0; i < 52; ++i) silent.push_back(std::make_unique<RawSocket>(service.port(), 2));
  std::this_thread::sleep_for(100ms);
  CHECK(probe() == 200);
  // More silent connections than the over-cap allowance: those over the cap are closed after
  // kOverCapHeaderTimeout (1 s), and probes get through again.
  for (int i = 0; i < 300; ++i) silent.push_back(std::make_unique<RawSocket>(service.port(), 3));
  std::this_thread::sleep_for(1500ms);
  CHECK(probe() == 200);
  std::this_thread::sleep_for(3s);
  CHECK(probe() == 200);
  // The 20 connections under the cap are still open; every silent one over it was closed.
  std::size_t closed = 0;
  for (auto& socket : silent) {
    socket->read_until_closed(10ms);
    if (socket->closed()) ++closed;
  }
  CHECK(closed == silent.size() - 20);
}

TEST_CASE("hardening: an open fencelockd refuses what a web page can send it",
          "[service][redis][hostile]") {
  ServiceUnderTest service(
      {"--allowed-hosts", "lock.example", "--allowed-origins", "https://ok.example"});
  HttpClient http = service.client();
  const std::string body = R"({"ttl_ms":3600000})";
  SECTION("a cross-site POST without a preflight (text/plain, as a form or fetch sends it)") {
    const HttpAnswer answer =
        http.request("POST", "/v1/locks/x", body,
                     {{"Origin", "https://evil.example"}, {"Content-Type", "text/plain"}});
    CHECK(answer.status == 403);
    CHECK(answer.error_code() == "cross_site_request");
  }
  SECTION("a body that is not JSON by its Content-Type (curl -d's default)") {
    const HttpAnswer answer = http.request("POST", "/v1/locks/x", body,
                                           {{"Content-Type", "application/x-www-form-urlencoded"}});
    CHECK(answer.status == 415);
    CHECK(answer.error_code() == "unsupported_media_type");
    CHECK_THAT(answer.json()["error"]["message"].get<std::string>(),
               Catch::Contains("Content-Type: application/json"));
  }
  SECTION("a read a browser marks cross-site, without an Origin") {
    const HttpAnswer answer =
        http.request("GET", "/v1/locks/x", "", {{"Sec-Fetch-Site", "cross-site"}});
    CHECK(answer.status == 403);
    CHECK(answer.error_code() == "cross_site_request");
  }
  SECTION("a DNS-rebinding Host") {
    const HttpAnswer answer = http.request("GET", "/v1/locks/x", "", {{"Host", "evil.example"}});
    CHECK(answer.status == 421);
    CHECK(answer.error_code() == "host_not_allowed");
    CHECK(http.request("POST", "/v1/locks/x", body, {{"Host", "evil.example:8080"}}).status == 421);
  }
  SECTION("an allowed Host or Origin is served") {
    CHECK(http.request("GET", "/v1/locks/x", "", {{"Host", "localhost:8080"}}).status == 200);
    CHECK(http.request("GET", "/v1/locks/x", "", {{"Host", "[::1]:8080"}}).status == 200);
    CHECK(http.request("GET", "/v1/locks/x", "", {{"Host", "LOCK.example"}}).status == 200);
    CHECK(http.request("GET", "/v1/locks/x", "", {{"Sec-Fetch-Site", "none"}}).status == 200);
    const HttpAnswer granted = http.request(
        "POST", "/v1/locks/ok", R"({"ttl_ms":1000})",
        {{"Origin", "https://ok.example"}, {"Content-Type", "application/json; charset=utf-8"}});
    CHECK(granted.status == 200);
    CHECK(http.del("/v1/locks/ok", {{"lease", granted.json()["lease"]}}).status == 200);
  }
  CHECK(locks_on_nodes(service) == 0);
}

TEST_CASE("hardening: with API keys the Host is not checked unless --allowed-hosts is given",
          "[service][redis][hostile]") {
  KeyFile keys;
  ServiceUnderTest service({"--auth-file", keys.path.string()});
  HttpClient http = service.client();
  auto headers = bearer(keys.reader);
  headers["Host"] = "fencelock.internal.example";
  CHECK(http.request("GET", "/v1/locks/x", "", headers).status == 200);
  headers["Origin"] = "https://evil.example";  // cross-site stays refused with keys too
  CHECK(http.request("GET", "/v1/locks/x", "", headers).status == 403);
}

TEST_CASE("hardening: every refused request's log line names the key that asked",
          "[service][redis][hostile]") {
  KeyFile keys;
  ServiceUnderTest service({"--auth-file", keys.path.string()});
  HttpClient http = service.client();
  // A name outside the key's patterns, in the path and in a lock set's body; a right it lacks.
  CHECK(
      http.request("POST", "/v1/locks/payroll.salaries", R"({"ttl_ms":1000})", bearer(keys.billing))
          .status == 403);
  CHECK(http.request("POST", "/v1/locks", R"({"names":["billing.a","payroll.b"],"ttl_ms":1000})",
                     bearer(keys.billing))
            .status == 403);
  CHECK(http.request("POST", "/v1/tokens/billing.x", "", bearer(keys.billing)).status == 403);
  CHECK(http.request("POST", "/v1/locks/billing.x", R"({"ttl_ms":1000})", bearer(keys.reader))
            .status == 403);
  REQUIRE(service.daemon->stop(SIGTERM) == std::optional<int>(0));
  std::size_t refused = 0;
  std::istringstream log(service.daemon->log());
  for (std::string line; std::getline(log, line);) {
    if (line.find("status=403") == std::string::npos) continue;
    ++refused;
    INFO(line);
    CHECK((line.find("key=billing") != std::string::npos ||
           line.find("key=reader") != std::string::npos));
  }
  CHECK(refused == 4);
}

TEST_CASE("hardening: a password file that is a directory or holds no password stops the start",
          "[service][redis]") {
  RedisCluster cluster(1);
  TempDir dir;
  std::ofstream(dir.path() / "empty");
  std::ofstream(dir.path() / "blank-line") << "\nsecret\n";
  std::filesystem::create_directory(dir.path() / "a-directory");
  const auto [file, reason] = GENERATE(table<std::string, std::string>({
      {"a-directory", "is not a regular file"},
      {"empty", "holds no password"},
      {"blank-line", "holds no password"},
      {"missing", "is not a regular file"},
  }));
  INFO(file);
  const FinishedRun run =
      run_fencelockd(dir.path(), {"--redis", join_addresses(cluster.addresses()), "--tokens",
                                  "sqlite:" + (dir.path() / "tokens.db").string(),
                                  "--redis-password-file", (dir.path() / file).string()});
  CHECK(run.exit_code != 0);
  CHECK_THAT(run.output, Catch::Contains(reason));
}

TEST_CASE(
    "hardening: a key file that cannot be read never delays a revocation past the next SIGHUP",
    "[service][redis]") {
  KeyFile keys;
  ServiceUnderTest service({"--auth-file", keys.path.string()});
  HttpClient http = service.client();
  REQUIRE(http.request("GET", "/v1/locks/x", "", bearer(keys.reader)).status == 200);
  // The key file becomes a FIFO nobody writes (opening it for reading would block for good),
  // SIGHUP after SIGHUP: each is refused at once and the keys in force stay.
  const std::filesystem::path saved = keys.dir.path() / "keys.saved";
  std::filesystem::rename(keys.path, saved);
  REQUIRE(::mkfifo(keys.path.c_str(), 0600) == 0);
  for (int i = 0; i < 6; ++i) {
    ::kill(service.daemon->pid(), SIGHUP);
    std::this_thread::sleep_for(100ms);
  }
  CHECK(service.daemon->log_shows("is not a regular file", 5s));
  CHECK(http.request("GET", "/v1/locks/x", "", bearer(keys.reader)).status == 200);  // kept
  // The file is back, without the reader's key: the next SIGHUP revokes it.
  std::filesystem::remove(keys.path);
  json file = json::parse(std::ifstream(saved));
  file["keys"].erase(1);
  std::ofstream(keys.path) << file.dump();
  ::kill(service.daemon->pid(), SIGHUP);
  CHECK(service.daemon->log_shows("auth_file_reloaded", 5s));
  CHECK(http.request("GET", "/v1/locks/x", "", bearer(keys.reader)).status == 401);
}

TEST_CASE("hardening: a request whose head was let in before a revocation is decided again",
          "[service][redis]") {
  KeyFile keys;
  ServiceUnderTest service({"--auth-file", keys.path.string()});
  RawSocket socket(service.port());
  socket.send(
      "POST /v1/locks/billing.revoked HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
      keys.billing.secret + "\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n");
  std::this_thread::sleep_for(200ms);  // the head is screened: billing may lock billing.*
  json file = json::parse(std::ifstream(keys.path));
  file["keys"].erase(0);  // billing is revoked
  std::ofstream(keys.dir.path() / "next.json") << file.dump();
  std::filesystem::rename(keys.dir.path() / "next.json", keys.path);
  ::kill(service.daemon->pid(), SIGHUP);
  REQUIRE(service.daemon->log_shows("auth_file_reloaded", 5s));
  socket.send(R"({"ttl_ms":1000})");
  CHECK(first_status(socket.read_until_closed(2s)) == 401);
  CHECK(locks_on_nodes(service) == 0);
}

TEST_CASE("hardening: a GET never takes a body, so the public routes hold none of the budget",
          "[service][redis][hostile]") {
  KeyFile keys;
  ServiceUnderTest service({"--auth-file", keys.path.string(), "--body-memory", "1048576"});
  std::vector<std::unique_ptr<RawSocket>> announcers;
  for (int i = 0; i < 18; ++i) {
    announcers.push_back(std::make_unique<RawSocket>(service.port()));
    announcers.back()->send(
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Content-Length: 65536\r\n\r\n");
  }
  for (auto& socket : announcers) CHECK(first_status(socket->read_until_closed(2s)) == 400);
  HttpClient http = service.client();
  CHECK(http.request("POST", "/v1/locks/billing.b", R"({"ttl_ms":1000})", bearer(keys.billing))
            .status == 200);
}

TEST_CASE("hardening: a refusal on the head reaches a client that is still sending its body",
          "[service][redis][hostile]") {
  KeyFile keys;
  ServiceUnderTest service({"--auth-file", keys.path.string(), "--body-limit", "16777216"});
  RawSocket socket(service.port());
  socket.send(
      "POST /v1/locks/billing.x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: 4194304\r\n\r\n");
  const std::string block(64 * 1024, ' ');
  for (int i = 0; i < 64; ++i) {
    if (!socket.send(block)) break;
  }
  CHECK(first_status(socket.read_until_closed(3s)) == 401);
}

TEST_CASE("hardening: refusals on the head keep HEAD bodiless and echo no raw bytes",
          "[service][redis][hostile]") {
  ServiceUnderTest service;
  RawSocket head(service.port());
  head.send("HEAD /v1/locks/a HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://evil\r\n\r\n");
  const std::string answer = head.read_until_closed(2s);
  CHECK(first_status(answer) == 405);
  CHECK_THAT(answer, Catch::EndsWith("\r\n\r\n"));
  CHECK(head.closed());
  HttpClient http = service.client();
  const HttpAnswer site = http.request("GET", "/v1/locks/a", "",
                                       {{"Sec-Fetch-Site", std::string(19, 'a') + "\xc3\xa9"}});
  CHECK(site.status == 403);
  CHECK(site.json().is_object());
  const HttpAnswer host = http.request("GET", "/v1/locks/a", "", {{"Host", "\xff\xfe.example"}});
  CHECK(host.status == 421);
  CHECK(host.json().is_object());
  CHECK(http.request("GET", "/v1/locks/a", "", {{"Host", "[::1]evil.example"}}).status == 421);
  CHECK(http.request("GET", "/v1/locks/a", "", {{"Origin", ""}}).status == 200);
}
