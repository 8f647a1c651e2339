// API keys against the real fencelockd over loopback, with real redis-servers: refusals change
// nothing on any node, leases are bound to the key that took them, rate limits are per key, the
// auth file reloads on SIGHUP, and no secret ever reaches the log or the metrics.
#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "auth/api_secret.h"
#include "fencelock/client.h"
#include "fencelockd_process.h"
#include "http_client.h"
#include "service_under_test.h"
#include "sync_redis.h"
#include "temp_dir.h"

using namespace fencelock::testing;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

struct Key {
  std::string id;
  std::string secret;
  json entry;
};

Key make_key(const std::string& id, json names, json rights, std::optional<double> rate = {}) {
  Key key{id, "flk_" + fencelock::service::sha256_hex("secret of " + id), {}};
  key.entry = json{{"id", id},
                   {"secret_sha256", fencelock::service::sha256_hex(key.secret)},
                   {"names", std::move(names)},
                   {"rights", std::move(rights)}};
  if (rate) key.entry["rate"] = *rate;
  return key;
}

void write_keys(const std::filesystem::path& path, const std::vector<Key>& keys) {
  json entries = json::array();
  for (const Key& key : keys) entries.push_back(key.entry);
  std::ofstream(path) << json{{"keys", entries}}.dump(2);
}

std::map<std::string, std::string> bearer(const std::string& secret) {
  return {{"Authorization", "Bearer " + secret}};
}

// One deployment with an auth file: billing may lock and read billing.*, ops may read and draw
// tokens everywhere, burst is limited to 2 requests at 1/s.
struct Secured {
  TempDir keys_dir;
  std::filesystem::path auth_file = keys_dir.path() / "keys.json";
  Key billing = make_key("billing", {"billing.*"}, {"lock", "read"});
  Key payroll = make_key("payroll", {"payroll.*", "billing.shared"}, {"lock"});
  Key ops = make_key("ops", {"*"}, {"read", "token"});
  Key burst = make_key("burst", {"*"}, {"lock", "read"}, 1.0);
  Key oncall = make_key("oncall", {"billing.*"}, {"admin"});
  std::optional<ServiceUnderTest> service;

  Secured() {
    write_keys(auth_file, {billing, payroll, ops, burst, oncall});
    service.emplace(std::vector<std::string>{"--auth-file", auth_file.string()});
  }
  HttpAnswer call(const std::string& method, const std::string& target, const json& body,
                  const Key* key) {
    return service->client().request(
        method, target, body.is_null() ? "" : body.dump(),
        key ? bearer(key->secret) : std::map<std::string, std::string>{});
  }
  std::int64_t keys_on_nodes() {
    std::int64_t total = 0;
    for (std::size_t i = 0; i < service->cluster.size(); ++i)
      total += SyncRedis(service->cluster.node(i).port()).count_keys();
    return total;
  }
  std::uint64_t current_token(const std::string& name) {
    return call("GET", "/v1/tokens/" + name, nullptr, &ops).json()["token"].get<std::uint64_t>();
  }
};

}  // namespace

TEST_CASE("http auth: refused requests are 401 or 403 and change nothing on any node",
          "[service][redis]") {
  Secured s;
  const json acquire{{"ttl_ms", 30000}};
  const auto token_before = s.current_token("billing.a");

  const HttpAnswer none = s.call("POST", "/v1/locks/billing.a", acquire, nullptr);
  CHECK(none.status == 401);
  CHECK(none.error_code() == "unauthenticated");
  CHECK(none.header("www-authenticate") == "Bearer realm=\"fencelock\"");
  Key stranger = make_key("stranger", {"*"}, {"lock"});
  CHECK(s.call("POST", "/v1/locks/billing.a", acquire, &stranger).status == 401);
  CHECK(s.service->client()
            .request("POST", "/v1/locks/billing.a", acquire.dump(),
                     {{"Authorization", "Basic " + s.billing.secret}})
            .status == 401);

  const HttpAnswer wrong_name = s.call("POST", "/v1/locks/payroll.a", acquire, &s.billing);
  CHECK(wrong_name.status == 403);
  CHECK(wrong_name.error_code() == "forbidden");
  const HttpAnswer wrong_right = s.call("POST", "/v1/tokens/billing.a", nullptr, &s.billing);
  CHECK(wrong_right.status == 403);
  CHECK_THAT(wrong_right.json()["error"]["message"].get<std::string>(), Catch::Contains("'token'"));
  CHECK(s.call("GET", "/v1/locks/billing.a", nullptr, &s.payroll).status == 403);  // no read
  CHECK(s.call("POST", "/v1/locks/billing.a", acquire, &s.ops).status == 403);     // no lock

  CHECK(s.keys_on_nodes() == 0);
  CHECK(s.current_token("billing.a") == token_before);
  // Health, readiness, metrics and the API's description stay reachable without a key (probes,
  // scrapers, client generators).
  CHECK(s.call("GET", "/healthz", nullptr, nullptr).status == 200);
  CHECK(s.call("GET", "/readyz", nullptr, nullptr).status == 200);
  CHECK(s.call("GET", "/metrics", nullptr, nullptr).status == 200);
  CHECK(s.call("GET", "/v1/openapi.json", nullptr, nullptr).status == 200);
  // And the right key works.
  const HttpAnswer granted = s.call("POST", "/v1/locks/billing.a", acquire, &s.billing);
  CHECK(granted.status == 200);
  CHECK(s.call("GET", "/v1/locks/billing.a", nullptr, &s.billing).json()["held"] == true);
}

TEST_CASE("http auth: a lease taken with one key cannot be extended or released with another",
          "[service][redis]") {
  Secured s;
  const HttpAnswer granted =
      s.call("POST", "/v1/locks/billing.shared", json{{"ttl_ms", 30000}}, &s.billing);
  REQUIRE(granted.status == 200);
  const std::string lease = granted.json()["lease"];
  const HttpAnswer extend = s.call("POST", "/v1/locks/billing.shared/extend",
                                   json{{"lease", lease}, {"ttl_ms", 1000}}, &s.payroll);
  CHECK(extend.status == 403);
  CHECK(extend.error_code() == "forbidden");
  const HttpAnswer release =
      s.call("DELETE", "/v1/locks/billing.shared", json{{"lease", lease}}, &s.payroll);
  CHECK(release.status == 403);
  CHECK(s.call("GET", "/v1/locks/billing.shared", nullptr, &s.billing).json()["held"] == true);
  CHECK(s.call("DELETE", "/v1/locks/billing.shared", json{{"lease", lease}}, &s.billing)
            .json()["released"] == true);
}

TEST_CASE(
    "http auth: only a key with the admin right revokes, and only on its names: the revoked "
    "lease is fenced out",
    "[service][redis]") {
  Secured s;
  const HttpAnswer stuck = s.call("POST", "/v1/locks/billing.job",
                                  json{{"ttl_ms", 60000}, {"owner", "w-1"}}, &s.billing);
  REQUIRE(stuck.status == 200);
  const std::string lease = stuck.json()["lease"];
  const json revoke{{"ttl_ms", 10000}, {"owner", "oncall: stuck job"}};
  // The lock right is not enough, nor the admin right on another name, nor no key at all.
  CHECK(s.call("POST", "/v1/locks/billing.job/revoke", revoke, &s.billing).status == 403);
  CHECK(s.call("POST", "/v1/locks/payroll.job/revoke", revoke, &s.oncall).status == 403);
  CHECK(s.call("POST", "/v1/locks/billing.job/revoke", revoke, nullptr).status == 401);
  CHECK(s.call("GET", "/v1/locks/billing.job", nullptr, &s.ops).json()["token"] ==
        stuck.json()["token"]);  // none of them changed anything

  const HttpAnswer bad = s.call("POST", "/v1/locks/billing.job/revoke",
                                json{{"ttl_ms", 10000}, {"wait_ms", 10}}, &s.oncall);
  CHECK(bad.status == 400);
  CHECK_THAT(bad.json()["error"]["message"].get<std::string>(), Catch::Contains("wait_ms"));

  const HttpAnswer revoked = s.call("POST", "/v1/locks/billing.job/revoke", revoke, &s.oncall);
  REQUIRE(revoked.status == 200);
  CHECK(revoked.json()["token"].get<std::uint64_t>() > stuck.json()["token"].get<std::uint64_t>());
  CHECK(revoked.json()["validity_ms"].get<long>() > 9000);
  const json status = s.call("GET", "/v1/locks/billing.job", nullptr, &s.ops).json();
  CHECK(status["token"] == revoked.json()["token"]);
  CHECK(status["owner"] == "oncall: stuck job");

  const HttpAnswer old_extend = s.call("POST", "/v1/locks/billing.job/extend",
                                       json{{"lease", lease}, {"ttl_ms", 60000}}, &s.billing);
  CHECK(old_extend.status == 409);
  CHECK(old_extend.error_code() == "not_held");
  CHECK(s.call("DELETE", "/v1/locks/billing.job", json{{"lease", lease}}, &s.billing)
            .json()["released"] == false);
  // The revoker's lease is its key's: extended and released with it, not with the old holder's.
  const std::string new_lease = revoked.json()["lease"];
  CHECK(s.call("POST", "/v1/locks/billing.job/extend", json{{"lease", new_lease}, {"ttl_ms", 5000}},
               &s.oncall)
            .status == 403);  // extend needs the lock right, which this key does not have
  CHECK(s.call("DELETE", "/v1/locks/billing.job", json{{"lease", new_lease}}, &s.billing).status ==
        403);  // another key's lease
}

TEST_CASE("http auth: a listing shows only the names the key may read", "[service][redis]") {
  Secured s;
  for (const char* name : {"billing.a", "billing.b", "billing.shared"})
    REQUIRE(s.call("POST", std::string("/v1/locks/") + name, json{{"ttl_ms", 30000}}, &s.billing)
                .status == 200);
  REQUIRE(s.call("POST", "/v1/locks/payroll.x", json{{"ttl_ms", 30000}}, &s.payroll).status == 200);
  auto names = [&](const Key& key) {
    std::set<std::string> seen;
    const HttpAnswer page = s.call("GET", "/v1/locks?limit=100", nullptr, &key);
    REQUIRE(page.status == 200);
    const json body = page.json();
    CHECK(body["next"].is_null());
    for (const json& lock : body["locks"]) seen.insert(lock["name"].get<std::string>());
    return seen;
  };
  CHECK(names(s.billing) == std::set<std::string>{"billing.a", "billing.b", "billing.shared"});
  CHECK(names(s.ops) ==
        std::set<std::string>{"billing.a", "billing.b", "billing.shared", "payroll.x"});
  CHECK(s.call("GET", "/v1/locks", nullptr, &s.payroll).status == 403);  // no read right
  CHECK(s.call("GET", "/v1/locks", nullptr, nullptr).status == 401);
}

TEST_CASE("http auth: semaphore and read/write lock listings show only the names the key may read",
          "[service][redis][list]") {
  Secured s;
  for (const char* name : {"billing.pool", "billing.shared"}) {
    REQUIRE(s.call("POST", std::string("/v1/semaphores/") + name,
                   json{{"permits", 2}, {"ttl_ms", 30000}}, &s.billing)
                .status == 200);
    REQUIRE(s.call("POST", std::string("/v1/rwlocks/") + name,
                   json{{"mode", "read"}, {"ttl_ms", 30000}}, &s.billing)
                .status == 200);
  }
  REQUIRE(s.call("POST", "/v1/semaphores/payroll.pool", json{{"permits", 2}, {"ttl_ms", 30000}},
                 &s.payroll)
              .status == 200);
  REQUIRE(s.call("POST", "/v1/rwlocks/payroll.doc", json{{"mode", "write"}, {"ttl_ms", 30000}},
                 &s.payroll)
              .status == 200);
  auto names = [&](const std::string& path, const char* field, const Key& key) {
    std::set<std::string> seen;
    const HttpAnswer page = s.call("GET", path + "?limit=1000", nullptr, &key);
    REQUIRE(page.status == 200);
    const json body = page.json();
    CHECK(body["next"].is_null());
    for (const json& entry : body[field]) seen.insert(entry["name"].get<std::string>());
    return seen;
  };
  CHECK(names("/v1/semaphores", "semaphores", s.billing) ==
        std::set<std::string>{"billing.pool", "billing.shared"});
  CHECK(names("/v1/semaphores", "semaphores", s.ops) ==
        std::set<std::string>{"billing.pool", "billing.shared", "payroll.pool"});
  CHECK(names("/v1/rwlocks", "rwlocks", s.billing) ==
        std::set<std::string>{"billing.pool", "billing.shared"});
  CHECK(names("/v1/rwlocks", "rwlocks", s.ops) ==
        std::set<std::string>{"billing.pool", "billing.shared", "payroll.doc"});
  for (const char* path : {"/v1/semaphores", "/v1/rwlocks"}) {
    CHECK(s.call("GET", path, nullptr, &s.payroll).status == 403);  // no read right
    CHECK(s.call("GET", path, nullptr, nullptr).status == 401);
  }
}

TEST_CASE("http auth: a key over its rate gets 429 with Retry-After — other keys are not slowed",
          "[service][redis]") {
  Secured s;
  int limited = 0;
  HttpAnswer last;
  for (int i = 0; i < 5; ++i) {
    last = s.call("GET", "/v1/locks/any", nullptr, &s.burst);
    if (last.status == 429) {
      ++limited;
      CHECK(last.error_code() == "rate_limited");
      CHECK(last.header("retry-after") == "1");
      CHECK(last.json()["error"]["retry_after_ms"].get<int>() > 0);
    }
  }
  CHECK(limited >= 3);  // burst 1 at 1/s: at most two of five within the same second
  for (int i = 0; i < 20; ++i) {
    CHECK(s.call("GET", "/v1/locks/billing.x", nullptr, &s.billing).status == 200);
  }
}

TEST_CASE("http auth: SIGHUP reloads the key file — a bad file keeps the keys in force",
          "[service][redis]") {
  Secured s;
  Key fresh = make_key("fresh", {"*"}, {"read"});
  CHECK(s.call("GET", "/v1/locks/x", nullptr, &fresh).status == 401);
  write_keys(s.auth_file, {s.ops, fresh});  // billing dropped, fresh added
  ::kill(s.service->daemon->pid(), SIGHUP);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (s.call("GET", "/v1/locks/x", nullptr, &fresh).status != 200) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(20ms);
  }
  CHECK(s.call("GET", "/v1/locks/billing.a", nullptr, &s.billing).status == 401);
  std::ofstream(s.auth_file) << R"({"keys": [{"id": "broken"}]})";
  ::kill(s.service->daemon->pid(), SIGHUP);
  while (s.service->daemon->log().find("auth_file_rejected") == std::string::npos) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(20ms);
  }
  CHECK_THAT(s.service->daemon->log(), Catch::Contains("secret_sha256 is missing"));
  CHECK(s.call("GET", "/v1/locks/x", nullptr, &fresh).status == 200);  // old keys still in force
}

TEST_CASE("http auth: `fencelockd keys new` makes a key that works, and no secret is ever logged",
          "[service][redis]") {
  Secured s;
  TempDir dir;
  const FinishedRun made = run_fencelockd(
      dir.path(), {"keys", "new", "--id", "made", "--names", "made.*", "--rights", "lock,read"});
  REQUIRE(made.exit_code == 0);
  // Its output mixes stdout (secret, then entry) and stderr (a hint): find the lines.
  const auto secret_start = made.output.find("flk_");
  REQUIRE(secret_start != std::string::npos);
  const std::string secret = made.output.substr(secret_start, 4 + 64);
  const auto line_start = made.output.find("{\"id\"");
  REQUIRE(line_start != std::string::npos);
  const json entry =
      json::parse(made.output.substr(line_start, made.output.find('\n', line_start) - line_start));
  CHECK(entry["secret_sha256"] == fencelock::service::sha256_hex(secret));
  Key made_key{"made", secret, entry};
  write_keys(s.auth_file, {s.billing, s.ops, made_key});
  ::kill(s.service->daemon->pid(), SIGHUP);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (s.call("GET", "/v1/locks/made.x", nullptr, &made_key).status != 200) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(20ms);
  }
  // The SDK with the key: granted, extended, released; without it: denied.
  fencelock::ClientOptions options;
  options.endpoints = {s.service->endpoint()};
  options.api_key = secret;
  auto client = fencelock::Client::create(options);
  REQUIRE(client.ok());
  auto lease = client->acquire("made.sdk", 10s);
  REQUIRE(lease.ok());
  CHECK(client->extend(lease.value(), 10s).ok());
  options.api_key.clear();
  auto anonymous = fencelock::Client::create(options);
  CHECK(anonymous->acquire("made.sdk2", 10s).error().code == fencelock::ErrorCode::kDenied);
  const std::string lease_string = lease->lease_string();
  CHECK(client->release(lease.value()).ok());

  const std::string metrics = s.call("GET", "/metrics", nullptr, nullptr).body;
  REQUIRE(s.service->daemon->stop(SIGTERM) == std::optional<int>(0));  // the whole log, written
  const std::string log = s.service->daemon->log();
  CHECK_THAT(log, Catch::Contains("key=made"));  // the audit trail names the key
  for (const std::string& secret_text :
       {secret, s.billing.secret, s.ops.secret, lease_string.substr(lease_string.find('.') + 1)}) {
    CHECK(log.find(secret_text) == std::string::npos);
    CHECK(metrics.find(secret_text) == std::string::npos);
  }
}

TEST_CASE("http auth: without --auth-file the log says loudly that anyone may use it",
          "[service][redis]") {
  ServiceUnderTest s;
  CHECK_THAT(s.daemon->log(), Catch::Contains("OPEN_TO_ANYONE"));
  CHECK(s.client().post("/v1/locks/open", json{{"ttl_ms", 1000}}).status == 200);
}

TEST_CASE("http auth: fencelockd authenticates to password-protected lock nodes — never logs it",
          "[service][redis]") {
  RedisCluster cluster(3);
  const std::string password = "n0de pass";
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    REQUIRE(SyncRedis(cluster.node(i).port())
                .command({"CONFIG", "SET", "requirepass", password})
                .kind == SyncReply::Kind::kStatus);
  }
  TempDir dir;
  const auto password_file = dir.path() / "redis-password";
  std::ofstream(password_file) << password << "\n";
  auto ready = [](Fencelockd& daemon) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (HttpClient(daemon.port()).get("/readyz").status == 200) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  };
  const std::vector<std::string> base = {"--redis", join_addresses(cluster.addresses()), "--tokens",
                                         "sqlite:" + (dir.path() / "t.db").string()};
  SECTION("from a file") {
    auto args = base;
    args.insert(args.end(), {"--redis-password-file", password_file.string()});
    Fencelockd daemon(dir.path(), args);
    REQUIRE(ready(daemon));
    CHECK(HttpClient(daemon.port()).post("/v1/locks/a", json{{"ttl_ms", 1000}}).status == 200);
    REQUIRE(daemon.stop(SIGTERM) == std::optional<int>(0));  // the whole log, written
    CHECK(daemon.log().find(password) == std::string::npos);
  }
  SECTION("from the environment") {
    Fencelockd daemon(dir.path(), base, {"FENCELOCK_REDIS_PASSWORD=" + password});
    REQUIRE(ready(daemon));
    REQUIRE(daemon.stop(SIGTERM) == std::optional<int>(0));  // the whole log, written
    CHECK(daemon.log().find(password) == std::string::npos);
  }
  SECTION("without it the nodes are refused, and the log says why") {
    Fencelockd daemon(dir.path(), base);
    CHECK_FALSE(ready(daemon));
    CHECK_THAT(daemon.log(), Catch::Contains("NOAUTH") || Catch::Contains("AUTH"));
  }
}

TEST_CASE("http auth: a key's max_locks and max_waiters are answered 429 quota_exceeded",
          "[service][redis]") {
  Secured s;
  Key capped = make_key("capped", {"*"}, {"lock"});
  capped.entry["max_locks"] = 2;
  capped.entry["max_waiters"] = 1;
  write_keys(s.auth_file, {s.billing, s.ops, capped});
  ::kill(s.service->daemon->pid(), SIGHUP);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (s.call("POST", "/v1/locks/probe", json{{"ttl_ms", 10}}, &capped).status != 200) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(20ms);
  }
  std::this_thread::sleep_for(50ms);  // the probe's lease (10 ms) is over
  const json ttl{{"ttl_ms", 30000}};
  const HttpAnswer a = s.call("POST", "/v1/locks/cap.a", ttl, &capped);
  REQUIRE(a.status == 200);
  REQUIRE(s.call("POST", "/v1/locks/cap.b", ttl, &capped).status == 200);
  const HttpAnswer third = s.call("POST", "/v1/locks/cap.c", ttl, &capped);
  CHECK(third.status == 429);
  CHECK(third.error_code() == "quota_exceeded");
  CHECK(third.header("retry-after") == "1");
  CHECK(s.keys_on_nodes() == 10);  // a and b on 5 nodes; c was never tried
  CHECK(s.call("DELETE", "/v1/locks/cap.a", json{{"lease", a.json()["lease"]}}, &capped)
            .json()["released"] == true);
  // One slot free again; a waiter on a held name takes the only waiter slot.
  const HttpAnswer held = s.call("POST", "/v1/locks/billing.w", ttl, &s.billing);
  REQUIRE(held.status == 200);
  auto waiter = std::async(std::launch::async, [&] {
    return HttpClient(s.service->port())
        .request("POST", "/v1/locks/billing.w", json{{"ttl_ms", 1000}, {"wait_ms", 3000}}.dump(),
                 bearer(capped.secret));
  });
  std::this_thread::sleep_for(300ms);
  const HttpAnswer second_waiter =
      s.call("POST", "/v1/locks/billing.w2", json{{"ttl_ms", 1000}, {"wait_ms", 3000}}, &capped);
  CHECK(second_waiter.status == 429);
  CHECK_THAT(second_waiter.json()["error"]["message"].get<std::string>(),
             Catch::Contains("max_waiters"));
  CHECK(waiter.get().status == 409);  // the first waiter waited its 3 s and was refused
}

TEST_CASE("http auth: a request id answers its grant again only to the key that made it",
          "[service][redis]") {
  Secured s;
  const json acquire{{"ttl_ms", 30000}, {"request_id", "7d1e0c4b-retry"}};
  const HttpAnswer first = s.call("POST", "/v1/locks/billing.shared", acquire, &s.billing);
  REQUIRE(first.status == 200);
  CHECK_FALSE(first.json().contains("repeated"));
  const HttpAnswer again = s.call("POST", "/v1/locks/billing.shared", acquire, &s.billing);
  REQUIRE(again.status == 200);
  CHECK(again.json()["repeated"] == true);
  CHECK(again.json()["lease"] == first.json()["lease"]);
  CHECK(again.json()["token"] == first.json()["token"]);
  // Another key with the same request id and name is another request: refused as held.
  const HttpAnswer other = s.call("POST", "/v1/locks/billing.shared", acquire, &s.payroll);
  CHECK(other.status == 409);
  CHECK(other.error_code() == "locked");
  CHECK_FALSE(other.body.find(first.json()["lease"].get<std::string>()) != std::string::npos);
  // The lease it answered twice is one lease: released once, it is gone.
  CHECK(s.call("DELETE", "/v1/locks/billing.shared", {{"lease", first.json()["lease"]}}, &s.billing)
            .json()["released"] == true);
  CHECK(s.keys_on_nodes() == 0);
}

TEST_CASE("http auth: read/write locks need the lock right on the name, and a grant is its key's",
          "[service][redis][rwlock]") {
  Secured s;
  const json read{{"mode", "read"}, {"ttl_ms", 30000}};
  // No key, a key without the lock right, a name outside the key's patterns: nothing is taken.
  CHECK(s.call("POST", "/v1/rwlocks/billing.doc", read, nullptr).status == 401);
  CHECK(s.call("POST", "/v1/rwlocks/billing.doc", read, &s.ops).status == 403);
  CHECK(s.call("POST", "/v1/rwlocks/payroll.doc", read, &s.billing).status == 403);
  CHECK(s.keys_on_nodes() == 0);

  const HttpAnswer granted = s.call("POST", "/v1/rwlocks/billing.shared", read, &s.billing);
  REQUIRE(granted.status == 200);
  const std::string lease = granted.json()["lease"];
  // Another key with the lock right on the name can neither extend nor release the grant.
  CHECK(s.call("POST", "/v1/rwlocks/billing.shared/extend",
               json{{"lease", lease}, {"ttl_ms", 1000}}, &s.payroll)
            .error_code() == "forbidden");
  CHECK(s.call("DELETE", "/v1/rwlocks/billing.shared", json{{"lease", lease}}, &s.payroll).status ==
        403);
  // Status needs the read right: ops sees the holder, payroll (lock only) does not.
  const HttpAnswer status = s.call("GET", "/v1/rwlocks/billing.shared", nullptr, &s.ops);
  REQUIRE(status.status == 200);
  CHECK(status.json()["holders"].size() == 1);
  CHECK(status.body.find(lease) == std::string::npos);  // never a lease
  CHECK(s.call("GET", "/v1/rwlocks/billing.shared", nullptr, &s.payroll).status == 403);
  CHECK(s.call("DELETE", "/v1/rwlocks/billing.shared", json{{"lease", lease}}, &s.billing)
            .json()["released"] == true);
  CHECK(s.keys_on_nodes() == 0);
}
