#include "workload.h"

#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "http_client.h"
#include "sync_redis.h"

namespace fencelock::faults {

namespace {

using testing::HttpAnswer;
using testing::HttpClient;

std::string detail(const HttpAnswer& answer) {
  if (answer.status == 0) return "no answer";
  const std::string code = answer.error_code();
  return std::to_string(answer.status) + (code.empty() ? "" : " " + code);
}

// One keep-alive client per instance, made on first use and again when the instance moved.
class Clients {
 public:
  Clients(const Cluster& cluster, std::chrono::milliseconds timeout)
      : cluster_(cluster), timeout_(timeout) {}
  // nullptr when instance i is down.
  HttpClient* instance(std::size_t i) {
    const std::uint16_t port = cluster_.instance_port(i);
    if (port == 0) return nullptr;
    auto& slot = clients_[i];
    if (!slot.client || slot.port != port)
      slot = {port, std::make_unique<HttpClient>(port, timeout_)};
    return slot.client.get();
  }
  HttpClient& store() {
    if (!store_) store_ = std::make_unique<HttpClient>(cluster_.store_port(), timeout_);
    return *store_;
  }

 private:
  struct Slot {
    std::uint16_t port = 0;
    std::unique_ptr<HttpClient> client;
  };
  const Cluster& cluster_;
  std::chrono::milliseconds timeout_;
  std::map<std::size_t, Slot> clients_;
  std::unique_ptr<HttpClient> store_;
};

// The answer's body as a JSON object; an empty one when it is not one (no answer, a cut body):
// value() on what did not parse would throw.
nlohmann::json object_of(const HttpAnswer& answer) {
  nlohmann::json body = answer.json();
  return body.is_object() ? body : nlohmann::json::object();
}

Outcome outcome_of(const HttpAnswer& answer, unsigned refused_status) {
  if (answer.status == 200) return Outcome::kOk;
  if (answer.status == refused_status || answer.status == 400) return Outcome::kFail;
  return Outcome::kInfo;  // 503, a timeout, a dropped connection: it may have happened
}

// An operation about to be invoked.
Operation operation(int process, std::string f, std::string name, std::int64_t lease = -1,
                    std::uint64_t token = 0) {
  Operation op;
  op.process = process;
  op.f = std::move(f);
  op.name = std::move(name);
  op.lease = lease;
  op.token = token;
  return op;
}

// Completes grant `index` (an acquire or a revoke) with its answer.
void record_grant(History& history, std::size_t index, const HttpAnswer& granted,
                  unsigned refused_status) {
  const nlohmann::json body = object_of(granted);
  history.end(index, outcome_of(granted, refused_status), [&](Operation& op) {
    op.detail = detail(granted);
    // fencelockd's own 503 to a revoke is a failed grant: it undid what it wrote (checkers.cpp).
    if (op.f == "revoke" && granted.status == 503 && body.contains("error"))
      op.outcome = Outcome::kFail;
    if (op.f == "revoke" && granted.status != 200 && body.is_object() && body.contains("error") &&
        body["error"].is_object()) {
      op.detail += ": " + body["error"].value("message", "");  // why, for people
    }
    if (granted.status != 200) return;
    op.token = body.value("token", std::uint64_t{0});
    op.validity_ms = body.value("validity_ms", std::int64_t{0});
    op.waited_ms = body.value("waited_ms", std::int64_t{0});
    op.lease_string = body.value("lease", "");
    op.repeated = body.value("repeated", false);
  });
}

// A lease a workload client holds: what its lock-set step and its release need.
struct Held {
  int process = 0;
  std::int64_t lease = -1;  // the grant's index in the history
  std::uint64_t token = 0;
  std::string secret;
  std::int64_t ttl = 0;
};

Held held_of(int process, std::size_t lease, const HttpAnswer& granted, std::int64_t ttl) {
  const nlohmann::json body = object_of(granted);
  return {process, static_cast<std::int64_t>(lease), body.value("token", std::uint64_t{0}),
          body.value("lease", ""), ttl};
}

// A fenced read of the set at `set_key` with `held`'s token; the set read ("" when absent), or
// nothing when the store did not answer it.
std::optional<std::string> fenced_read(History& history, Clients& clients,
                                       const std::string& set_key, const Held& held) {
  const std::map<std::string, std::string> fencing{{"Fencing-Token", std::to_string(held.token)}};
  const std::size_t index =
      history.begin(operation(held.process, "read", set_key, held.lease, held.token));
  const HttpAnswer seen = clients.store().request("GET", "/objects/" + set_key, "", fencing);
  const bool read_ok = seen.status == 200 || seen.status == 404;
  const std::string before = seen.status == 200 ? object_of(seen).value("value", "") : "";
  history.end(index, read_ok ? Outcome::kOk : outcome_of(seen, 409), [&](Operation& op) {
    op.value = before;
    op.detail = detail(seen);
  });
  if (!read_ok) return std::nullopt;
  return before;
}

// Sleeps a random part of the first half of `held`'s ttl.
void hold_a_while(std::mt19937_64& random, const Held& held) {
  std::this_thread::sleep_for(
      std::chrono::milliseconds(random() % static_cast<std::uint64_t>(held.ttl / 2 + 1)));
}

// Lock-set (Jepsen's): a fenced read early in the lease, then, after holding a while (up to half
// the ttl), the write of what was read plus one new element, p<process>-<++element>.
void lock_set_step(History& history, Clients& clients, const std::string& set_key,
                   std::mt19937_64& random, const Held& held, std::uint64_t& element) {
  const std::optional<std::string> before = fenced_read(history, clients, set_key, held);
  hold_a_while(random, held);
  if (!before) return;
  const std::map<std::string, std::string> fencing{{"Fencing-Token", std::to_string(held.token)}};
  Operation write = operation(held.process, "write", set_key, held.lease, held.token);
  write.value = *before + (before->empty() ? "" : ",") + "p" + std::to_string(held.process) + "-" +
                std::to_string(++element);
  const std::size_t write_index = history.begin(write);
  const HttpAnswer written =
      clients.store().request("PUT", "/objects/" + set_key, write.value, fencing);
  history.end(write_index, outcome_of(written, 409),
              [&](Operation& op) { op.detail = detail(written); });
}

// Extends `held` (a lease on `lock_name`, at `lock_path`) by its own ttl.
void extend_lease(History& history, HttpClient& http, const std::string& lock_path,
                  const std::string& lock_name, const Held& held) {
  Operation extend = operation(held.process, "extend", lock_name, held.lease);
  extend.ttl_ms = held.ttl;
  const std::size_t index = history.begin(extend);
  const HttpAnswer extended =
      http.post(lock_path + "/extend", {{"lease", held.secret}, {"ttl_ms", held.ttl}});
  history.end(index, outcome_of(extended, 409), [&](Operation& op) {
    op.detail = detail(extended);
    if (extended.status == 200)
      op.validity_ms = object_of(extended).value("validity_ms", std::int64_t{0});
  });
}

// Releases `held`, a lease on `lock_name` in `collection` ("locks" or "rwlocks").
void release_lease(History& history, HttpClient& http, const std::string& lock_name,
                   const Held& held, const std::string& collection = "locks") {
  const std::size_t index =
      history.begin(operation(held.process, "release", lock_name, held.lease));
  const HttpAnswer released =
      http.del("/v1/" + collection + "/" + lock_name, {{"lease", held.secret}});
  history.end(index, outcome_of(released, 409),
              [&](Operation& op) { op.detail = detail(released); });
}

// Bounds one listing: far more pages than the campaign's few names could need.
constexpr int kMaxPages = 1000;

// Ends listing `index` as failed after `pages` pages, with what they listed.
void end_listing(History& history, std::size_t index, Outcome outcome, int pages,
                 std::vector<Listed> listed, std::string why) {
  history.end(index, outcome, [&](Operation& op) {
    op.pages = pages;
    op.listed = std::move(listed);
    op.detail = std::move(why);
  });
}

// One listing of `prefix`, `limit` names a page, following `next` until it is null. A page that
// is not a listing (a 503, no answer) ends it unfinished (kInfo; a 400 is kFail): list again.
void list_all(History& history, HttpClient& http, int process, const std::string& prefix,
              std::size_t limit) {
  const std::size_t index = history.begin(operation(process, "list", prefix));
  std::vector<Listed> listed;
  std::string cursor;
  for (int pages = 0; pages < kMaxPages;) {
    const HttpAnswer page =
        http.get("/v1/locks?prefix=" + prefix + "&limit=" + std::to_string(limit) +
                 (cursor.empty() ? "" : "&cursor=" + cursor));
    const nlohmann::json body = page.json();
    if (page.status != 200 || !body.is_object() || !body.contains("locks") ||
        !body["locks"].is_array()) {
      end_listing(history, index, page.status == 400 ? Outcome::kFail : Outcome::kInfo, pages,
                  std::move(listed), detail(page) + " on page " + std::to_string(pages + 1));
      return;
    }
    ++pages;
    for (const nlohmann::json& lock : body["locks"]) {
      if (!lock.is_object() || !lock.contains("name") || !lock["name"].is_string()) continue;
      const bool has_token = lock.contains("token") && lock["token"].is_number_unsigned();
      listed.push_back({lock["name"].get<std::string>(),
                        has_token ? lock["token"].get<std::uint64_t>() : std::uint64_t{0}});
    }
    if (!body.contains("next") || !body["next"].is_string()) {
      end_listing(history, index, Outcome::kOk, pages, std::move(listed), "200");
      return;
    }
    cursor = body["next"].get<std::string>();
  }
  end_listing(history, index, Outcome::kInfo, kMaxPages, std::move(listed), "too many pages");
}

}  // namespace

Workload::Workload(Cluster& cluster, History& history, WorkloadSettings settings)
    : cluster_(cluster), history_(history), settings_(std::move(settings)) {}

Workload::~Workload() {
  stop();
}

void Workload::start(std::chrono::steady_clock::time_point deadline) {
  deadline_ = deadline;
  int process = 0;
  for (std::size_t i = 0; i < settings_.lock_clients; ++i, ++process) {
    threads_.emplace_back([this, process] {
      lock_client(process, settings_.seed * 1000 + static_cast<std::uint64_t>(process));
    });
  }
  counter_port_ = cluster_.counter().port();
  if (settings_.naive_counter != NaiveCounter::kNone) {
    threads_.emplace_back([this, process] {
      const std::uint64_t seed = settings_.seed * 1000 + static_cast<std::uint64_t>(process);
      if (settings_.naive_counter == NaiveCounter::kRedisIncr) {
        naive_draw_client(process, seed);
      } else {
        naive_sqlite_client(process, seed);
      }
    });
    ++process;
  }
  for (std::size_t i = 0; i < settings_.draw_clients; ++i, ++process) {
    threads_.emplace_back([this, process] {
      draw_client(process, settings_.seed * 1000 + static_cast<std::uint64_t>(process));
    });
  }
  for (std::size_t i = 0; i < settings_.revoke_clients; ++i, ++process) {
    threads_.emplace_back([this, process] {
      revoke_client(process, settings_.seed * 1000 + static_cast<std::uint64_t>(process));
    });
  }
  for (std::size_t i = 0; i < settings_.repeat_clients; ++i, process += 2) {
    threads_.emplace_back([this, process] {
      repeat_client(process, settings_.seed * 1000 + static_cast<std::uint64_t>(process));
    });
  }
  for (std::size_t i = 0; i < settings_.listing_clients; ++i, ++process) {
    threads_.emplace_back([this, process] {
      listing_client(process, settings_.seed * 1000 + static_cast<std::uint64_t>(process));
    });
  }
  for (std::size_t i = 0; i < settings_.rw_clients; ++i, ++process) {
    threads_.emplace_back([this, process] {
      rw_client(process, settings_.seed * 1000 + static_cast<std::uint64_t>(process));
    });
  }
}

void Workload::stop() {
  stop_ = true;
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
}

bool Workload::running() const {
  return !stop_ && std::chrono::steady_clock::now() < deadline_;
}

void Workload::lock_client(int process, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  Clients clients(cluster_, settings_.request_timeout);
  std::uniform_int_distribution<std::int64_t> ttl_ms(settings_.min_ttl.count(),
                                                     settings_.max_ttl.count());
  std::uint64_t element = 0;
  const std::string lock_path = "/v1/locks/" + settings_.lock_name;
  while (running()) {
    HttpClient* http = clients.instance(random() % cluster_.serving_count());
    if (http == nullptr) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    const std::int64_t ttl = ttl_ms(random);
    Operation acquire = operation(process, "acquire", settings_.lock_name);
    acquire.ttl_ms = ttl;
    const std::size_t lease = history_.begin(acquire);
    const HttpAnswer granted =
        http->post(lock_path, {{"ttl_ms", ttl}, {"wait_ms", settings_.wait.count()}});
    record_grant(history_, lease, granted, 409);
    if (granted.status != 200) {
      if (granted.status != 409) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    const Held held = held_of(process, lease, granted, ttl);
    lock_set_step(history_, clients, settings_.set_key, random, held, element);
    if (random() % 2 == 0 && running()) {
      extend_lease(history_, *http, lock_path, settings_.lock_name, held);
      std::this_thread::sleep_for(
          std::chrono::milliseconds(random() % static_cast<std::uint64_t>(ttl / 4 + 1)));
    }
    release_lease(history_, *http, settings_.lock_name, held);
  }
}

bool Workload::sleep_while_running(std::chrono::milliseconds d) const {
  const auto until = std::chrono::steady_clock::now() + d;
  while (running()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) return true;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(until - now, std::chrono::milliseconds(50)));
  }
  return false;
}

void Workload::revoke_client(int process, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  Clients clients(cluster_, settings_.request_timeout);
  std::uniform_int_distribution<std::int64_t> ttl_ms(settings_.min_ttl.count(),
                                                     settings_.max_ttl.count());
  std::uint64_t element = 0;
  const std::string revoke_path = "/v1/locks/" + settings_.lock_name + "/revoke";
  while (sleep_while_running(std::chrono::milliseconds(300 + random() % 900))) {
    HttpClient* http = clients.instance(random() % cluster_.serving_count());
    if (http == nullptr) continue;
    const std::int64_t ttl = ttl_ms(random);
    Operation revoke = operation(process, "revoke", settings_.lock_name);
    revoke.ttl_ms = ttl;
    const std::size_t lease = history_.begin(revoke);
    const HttpAnswer granted =
        http->post(revoke_path, {{"ttl_ms", ttl}, {"owner", "campaign-revoker"}});
    record_grant(history_, lease, granted, 409);
    if (granted.status != 200) continue;
    const Held held = held_of(process, lease, granted, ttl);
    lock_set_step(history_, clients, settings_.set_key, random, held, element);
    release_lease(history_, *http, settings_.lock_name, held);
  }
}

void Workload::repeat_client(int process, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  Clients clients(cluster_, settings_.request_timeout);
  std::uniform_int_distribution<std::int64_t> ttl_ms(settings_.min_ttl.count(),
                                                     settings_.max_ttl.count());
  std::uint64_t element = 0;
  std::uint64_t asked = 0;
  const std::string lock_path = "/v1/locks/" + settings_.lock_name;
  struct Answered {
    std::size_t index = 0;
    HttpAnswer answer;
  };
  while (running()) {
    const std::size_t first = random() % cluster_.serving_count();
    HttpClient* http = clients.instance(first);
    if (http == nullptr) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    const std::int64_t ttl = ttl_ms(random);
    const std::string request_id = "campaign-p" + std::to_string(process) + "-" +
                                   std::to_string(++asked) + "-" + std::to_string(random());
    const nlohmann::json body{
        {"ttl_ms", ttl}, {"wait_ms", settings_.wait.count()}, {"request_id", request_id}};
    const auto ask = [&](int by, HttpClient& on) {
      Operation acquire = operation(by, "acquire", settings_.lock_name);
      acquire.request_id = request_id;
      acquire.ttl_ms = ttl;
      Answered answered{history_.begin(acquire), on.post(lock_path, body)};
      record_grant(history_, answered.index, answered.answer, 409);
      return answered;
    };
    // 0-3: asked once; 4-7: again after the answer; 8-9: twice at once, on two connections.
    const std::uint64_t shape = random() % 10;
    const std::uint16_t twin_port = cluster_.instance_port(random() % cluster_.serving_count());
    const std::size_t again = random() % cluster_.serving_count();
    const std::int64_t delay_ms = random() % 2 == 0 ? 0 : static_cast<std::int64_t>(random() % 200);
    std::vector<Answered> answers;
    if (shape >= 8 && twin_port != 0) {
      Answered twin;
      std::thread twin_thread([&] {
        HttpClient other(twin_port, settings_.request_timeout);
        twin = ask(process + 1, other);
      });
      answers.push_back(ask(process, *http));
      twin_thread.join();
      answers.push_back(std::move(twin));
    } else {
      answers.push_back(ask(process, *http));
      if (shape >= 4 && sleep_while_running(std::chrono::milliseconds(delay_ms))) {
        if (HttpClient* other = clients.instance(again)) answers.push_back(ask(process, *other));
      }
    }
    // Every lease answered, each once (a repeat answers the same one again).
    std::vector<Held> held;
    bool refused = true;
    for (const Answered& answered : answers) {
      refused = refused && answered.answer.status == 409;
      if (answered.answer.status != 200) continue;
      const Held grant = held_of(process, answered.index, answered.answer, ttl);
      const auto same = [&](const Held& h) { return h.secret == grant.secret; };
      if (std::none_of(held.begin(), held.end(), same)) held.push_back(grant);
    }
    if (held.empty()) {
      if (!refused) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    lock_set_step(history_, clients, settings_.set_key, random, held.back(), element);
    for (const Held& lease : held) {
      if (HttpClient* any = clients.instance(random() % cluster_.serving_count()))
        release_lease(history_, *any, settings_.lock_name, lease);
    }
  }
}

void Workload::listing_client(int process, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  Clients clients(cluster_, settings_.request_timeout);
  constexpr std::int64_t kTtlMs = 2000;
  while (running()) {
    HttpClient* http = clients.instance(random() % cluster_.serving_count());
    if (http == nullptr) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    const std::string name =
        settings_.list_prefix + "listed-" +
        std::to_string(random() % std::max<std::size_t>(1, settings_.listed_names));
    Operation acquire = operation(process, "acquire", name);
    acquire.ttl_ms = kTtlMs;
    const std::size_t lease = history_.begin(acquire);
    const HttpAnswer granted =
        http->post("/v1/locks/" + name, {{"ttl_ms", kTtlMs}, {"wait_ms", 0}});
    record_grant(history_, lease, granted, 409);
    for (int n = 0; n < 2 && running(); ++n) {
      list_all(history_, *http, process, settings_.list_prefix, settings_.list_limit);
      std::this_thread::sleep_for(std::chrono::milliseconds(20 + random() % 80));
    }
    if (granted.status == 200) {
      release_lease(history_, *http, name, held_of(process, lease, granted, kTtlMs));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

void Workload::rw_client(int process, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  Clients clients(cluster_, settings_.request_timeout);
  std::uniform_int_distribution<std::int64_t> ttl_ms(settings_.min_ttl.count(),
                                                     settings_.max_ttl.count());
  std::uint64_t element = 0;
  const std::string& name = settings_.rw_lock_name;
  const std::string path = "/v1/rwlocks/" + name;
  // Every third attempt is a write (each client at its own offset), so a writer tries within a
  // few attempts of the faults healing: liveness judges writers (main.cpp).
  for (std::uint64_t attempt = static_cast<std::uint64_t>(process); running(); ++attempt) {
    HttpClient* http = clients.instance(random() % cluster_.serving_count());
    if (http == nullptr) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    const std::int64_t ttl = ttl_ms(random);
    Operation acquire = operation(process, "acquire", name);
    acquire.mode = attempt % 3 == 0 ? "write" : "read";
    acquire.ttl_ms = ttl;
    const std::size_t lease = history_.begin(acquire);
    const HttpAnswer granted = http->post(
        path, {{"mode", acquire.mode}, {"ttl_ms", ttl}, {"wait_ms", settings_.wait.count()}});
    record_grant(history_, lease, granted, 409);
    if (granted.status != 200) {
      if (granted.status != 409) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    const Held held = held_of(process, lease, granted, ttl);
    if (acquire.mode == "write") {
      lock_set_step(history_, clients, settings_.rw_set_key, random, held, element);
    } else {
      fenced_read(history_, clients, settings_.rw_set_key, held);
      hold_a_while(random, held);
    }
    if (random() % 2 == 0 && running()) extend_lease(history_, *http, path, name, held);
    release_lease(history_, *http, name, held, "rwlocks");
  }
}

void Workload::draw_client(int process, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  Clients clients(cluster_, settings_.request_timeout);
  const std::string path = "/v1/tokens/" + settings_.counter_name;
  while (running()) {
    HttpClient* http = clients.instance(random() % cluster_.serving_count());
    if (http == nullptr) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    Operation draw = operation(process, "draw", settings_.counter_name);
    const std::size_t index = history_.begin(draw);
    const HttpAnswer drawn = http->request("POST", path);
    history_.end(index, outcome_of(drawn, 0), [&](Operation& op) {
      op.detail = detail(drawn);
      if (drawn.status == 200) op.token = object_of(drawn).value("token", std::uint64_t{0});
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + random() % 20));
  }
}

void Workload::naive_draw_client(int process, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  const std::string name = "naive-" + settings_.counter_name;
  auto redis = std::make_unique<testing::SyncRedis>(counter_port_, settings_.request_timeout);
  while (running()) {
    const std::size_t index = history_.begin(operation(process, "draw", name));
    const testing::SyncReply reply = redis->command({"INCR", name});
    const bool ok = reply.kind == storage::NodeReply::Kind::kInteger && reply.integer > 0;
    history_.end(index, ok ? Outcome::kOk : Outcome::kInfo, [&](Operation& op) {
      if (ok) op.token = static_cast<std::uint64_t>(reply.integer);
      op.detail = ok ? "INCR" : "no answer";
    });
    if (!reply.answered()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      redis = std::make_unique<testing::SyncRedis>(counter_port_, settings_.request_timeout);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + random() % 20));
  }
}

std::filesystem::path naive_sqlite_file(const std::filesystem::path& dir) {
  return dir / "naive.db";
}

std::filesystem::path naive_sqlite_copy(const std::filesystem::path& dir) {
  return dir / "naive-copy.db";
}

namespace {

// Draws the next number from the counter file at `path` (made at the first draw); 0 on failure
// (the nemesis may be replacing the file).
std::uint64_t draw_from_file(const std::filesystem::path& path) {
  sqlite3* db = nullptr;
  std::uint64_t drawn = 0;
  if (sqlite3_open(path.c_str(), &db) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 1000);
    sqlite3_exec(db,
                 "PRAGMA journal_mode=WAL; CREATE TABLE IF NOT EXISTS c(n INTEGER NOT NULL);"
                 "INSERT INTO c SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM c);",
                 nullptr, nullptr, nullptr);
    sqlite3_stmt* next = nullptr;
    if (sqlite3_prepare_v2(db, "UPDATE c SET n = n + 1 RETURNING n", -1, &next, nullptr) ==
            SQLITE_OK &&
        sqlite3_step(next) == SQLITE_ROW) {
      drawn = static_cast<std::uint64_t>(sqlite3_column_int64(next, 0));
    }
    sqlite3_finalize(next);
  }
  sqlite3_close(db);
  return drawn;
}

}  // namespace

void Workload::naive_sqlite_client(int process, std::uint64_t seed) {
  std::mt19937_64 random(seed);
  const std::filesystem::path file = naive_sqlite_file(cluster_.dir());
  const std::filesystem::path copy = naive_sqlite_copy(cluster_.dir());
  while (running()) {
    const bool from_copy = random() % 2 == 0 && std::filesystem::exists(copy);
    const std::size_t index =
        history_.begin(operation(process, "draw", "naive-" + settings_.counter_name));
    const std::uint64_t drawn = draw_from_file(from_copy ? copy : file);
    history_.end(index, drawn != 0 ? Outcome::kOk : Outcome::kInfo, [&](Operation& op) {
      op.token = drawn;
      op.detail = from_copy ? "the copy" : "the file";
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + random() % 20));
  }
}

std::map<std::string, std::string> Workload::final_sets() const {
  HttpClient store(cluster_.store_port(), std::chrono::seconds(5));
  std::map<std::string, std::string> sets;
  for (const std::string& key : {settings_.set_key, settings_.rw_set_key}) {
    const HttpAnswer answer = store.get("/objects/" + key);
    sets[key] = answer.status == 200 ? object_of(answer).value("value", "") : "";
  }
  return sets;
}

}  // namespace fencelock::faults
