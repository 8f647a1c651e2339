// The resource store and the Kleppmann demo, as real processes over real HTTP.
#include <catch2/catch.hpp>
#include <mutex>
#include <sstream>
#include <thread>

#include "child_process.h"
#include "http_client.h"
#include "redis_server.h"
#include "service_under_test.h"
#include "temp_dir.h"

using namespace fencelock::testing;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

// A resource-store process on a free port.
struct Store {
  ChildProcess process;
  std::uint16_t port = 0;
  Store(const std::filesystem::path& dir, const std::string& mode) {
    port = pick_free_port();
    process.start({FENCELOCK_RESOURCE_STORE, "--listen", "127.0.0.1:" + std::to_string(port), "--db",
                   (dir / (mode + ".db")).string(), "--log", (dir / (mode + ".ops.log")).string(), "--mode", mode},
                  dir / (mode + ".out"));
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (HttpClient(port, 500ms).get("/healthz").status != 200) {
      if (std::chrono::steady_clock::now() > deadline || process.poll_exit()) FAIL("resource-store did not start");
      std::this_thread::sleep_for(10ms);
    }
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
  HttpAnswer put(const std::string& key, const std::string& value, std::optional<std::uint64_t> token) {
    std::map<std::string, std::string> headers;
    if (token) headers["Fencing-Token"] = std::to_string(*token);
    return HttpClient(port).request("PUT", "/objects/" + key, value, headers);
  }
  HttpAnswer get(const std::string& key, std::optional<std::uint64_t> token = std::nullopt) {
    std::map<std::string, std::string> headers;
    if (token) headers["Fencing-Token"] = std::to_string(*token);
    return HttpClient(port).request("GET", "/objects/" + key, "", headers);
  }
  std::vector<json> log() {
    std::vector<json> entries;
    std::stringstream lines(HttpClient(port).get("/log").body);
    for (std::string line; std::getline(lines, line);) entries.push_back(json::parse(line));
    return entries;
  }
};

}  // namespace

TEST_CASE("store: a stale token is refused with the newer token, and logged", "[examples]") {
  TempDir dir;
  Store store(dir.path(), "fenced");
  CHECK(store.put("doc", "v33", 33).status == 200);
  const HttpAnswer stale = store.put("doc", "v32", 32);
  CHECK(stale.status == 409);
  CHECK(stale.error_code() == "stale_token");
  CHECK(stale.json()["error"]["current_token"] == 33);
  CHECK(store.put("doc", "again33", 33).status == 409);  // equal tokens too, in fenced mode
  CHECK(store.put("doc", "v34", 34).status == 200);
  CHECK(store.get("doc").json() == json{{"key", "doc"}, {"value", "v34"}, {"token", 34}});
  CHECK(store.put("doc", "no token", std::nullopt).status == 400);

  const auto log = store.log();
  REQUIRE(log.size() == 4);
  CHECK(log[1]["outcome"] == "rejected_stale");
  CHECK(log[1]["token"] == 32);
  CHECK(log[3]["outcome"] == "applied");
}

TEST_CASE("store: same-token mode lets one lease write several times, never an older one", "[examples]") {
  TempDir dir;
  Store store(dir.path(), "same-token");
  CHECK(store.put("doc", "a", 5).status == 200);
  CHECK(store.put("doc", "b", 5).status == 200);
  CHECK(store.put("doc", "c", 4).status == 409);
  CHECK(store.get("doc").json()["value"] == "b");
}

TEST_CASE("store: a fenced read keeps an older holder from writing afterwards", "[examples]") {
  TempDir dir;
  Store store(dir.path(), "fenced");
  REQUIRE(store.put("acct", "100", 32).status == 200);
  CHECK(store.get("acct", 33).json()["value"] == "100");  // holder 33 reads...
  CHECK(store.get("acct", 34).json()["value"] == "100");  // ...then holder 34 reads (fenced)
  CHECK(store.put("acct", "110", 33).status == 409);      // 33's write based on its read: refused
  CHECK(store.get("acct", 33).status == 409);             // and 33 cannot even read any more
  CHECK(store.get("missing").status == 404);
}

TEST_CASE("store: concurrent writers never see token t accepted after t+1", "[examples]") {
  TempDir dir;
  Store store(dir.path(), "fenced");
  std::vector<std::thread> writers;
  for (int w = 0; w < 8; ++w) {
    writers.emplace_back([&, w] {
      HttpClient http(store.port);
      for (std::uint64_t t = static_cast<std::uint64_t>(w) + 1; t <= 400; t += 8) {
        http.request("PUT", "/objects/hot", "by " + std::to_string(w), {{"Fencing-Token", std::to_string(t)}});
      }
    });
  }
  for (auto& w : writers) w.join();
  std::uint64_t last_applied = 0;
  int applied = 0;
  for (const json& entry : store.log()) {
    if (entry["outcome"] != "applied") continue;
    ++applied;
    CHECK(entry["token"].get<std::uint64_t>() > last_applied);
    last_applied = entry["token"].get<std::uint64_t>();
  }
  CHECK(applied > 0);
  CHECK(store.get("hot").json()["token"] == last_applied);
}

TEST_CASE("demo: Kleppmann's pause loses data without fencing and is refused with it", "[examples][redis]") {
  ServiceUnderTest s;
  Store fenced(s.dir.path(), "fenced");
  Store unfenced(s.dir.path(), "unfenced");
  ChildProcess demo;
  const auto out = s.dir.path() / "demo.out";
  demo.start({FENCELOCK_KLEPPMANN_DEMO, "--fencelock", s.endpoint(), "--fenced-store", fenced.url(),
              "--unfenced-store", unfenced.url(), "--ttl-ms", "500"},
             out);
  std::optional<int> code;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!(code = demo.poll_exit()) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  REQUIRE(code == std::optional<int>(0));

  // The verdict from the stores' own logs, not from what the demo printed.
  auto writes = [](Store& store) {
    std::map<std::string, std::string> outcome_by_writer;
    for (const json& e : store.log()) {
      if (e["op"] == "write") outcome_by_writer[e["value"].get<std::string>()] = e["outcome"].get<std::string>();
    }
    return outcome_by_writer;
  };
  const auto unfenced_writes = writes(unfenced);
  CHECK(unfenced_writes.at("written by client 1") == "applied_unfenced");
  CHECK(unfenced_writes.at("written by client 2") == "applied_unfenced");
  const auto fenced_writes = writes(fenced);
  CHECK(fenced_writes.at("written by client 1") == "rejected_stale");
  CHECK(fenced_writes.at("written by client 2") == "applied");
}
