// The `fencelock` CLI as operators and cron jobs use it: the real binary against the real service.
#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include "build_paths.h"
#include "child_process.h"
#include "fencelock/client.h"
#include "service_under_test.h"

using namespace fencelock::testing;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

struct CliRun {
  int exit_code = -1;
  std::string output;
};

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Runs fencelock with FENCELOCK_ENDPOINT pointing at `s`.
CliRun cli(ServiceUnderTest& s, const std::vector<std::string>& args,
           std::chrono::milliseconds limit = 20s, const std::vector<std::string>& env = {}) {
  static int run = 0;
  const auto out = s.dir.path() / ("cli-" + std::to_string(++run) + ".out");
  std::vector<std::string> argv = {cli_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> extra = {"FENCELOCK_ENDPOINT=" + s.endpoint()};
  extra.insert(extra.end(), env.begin(), env.end());
  ChildProcess process;
  process.start(argv, out, extra);
  CliRun result;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto code = process.poll_exit()) {
      result.exit_code = *code;
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  result.output = slurp(out);
  return result;
}

json first_json_line(const std::string& text) {
  return json::parse(text.substr(0, text.find('\n')), nullptr, false);
}

// The line of stdout among -v's lines on stderr: the first that starts with '{'.
json json_line_among(const std::string& text) {
  const std::size_t start = text.starts_with("{") ? 0 : text.find("\n{");
  if (start == std::string::npos) return json();
  return first_json_line(text.substr(start == 0 ? 0 : start + 1));
}

// A thread that runs `then` once `marker` exists (or after 10 s): a fault injected while the
// command runs.
std::thread once_exists(const std::filesystem::path& marker, std::function<void()> then) {
  return std::thread([marker, then = std::move(then)] {
    const auto limit = std::chrono::steady_clock::now() + 10s;
    while (!std::filesystem::exists(marker) && std::chrono::steady_clock::now() < limit)
      std::this_thread::sleep_for(5ms);
    then();
  });
}

}  // namespace

TEST_CASE("cli: run passes the token, propagates the exit status and releases", "[client][redis]") {
  ServiceUnderTest s;
  const CliRun r = cli(s, {"run", "--ttl", "5s", "nightly", "--", "sh", "-c",
                           "echo \"name=$FENCELOCK_NAME token=$FENCELOCK_TOKEN "
                           "lease=${FENCELOCK_LEASE:-none}\"; exit 7"});
  CHECK(r.exit_code == 7);
  CHECK_THAT(r.output, Catch::Contains("name=nightly token=1 lease=none"));
  auto status = s.client().get("/v1/locks/nightly").json();
  CHECK(status["held"] == false);
  CHECK(status["last_token"] == 1);
}

TEST_CASE("cli: run against a held lock waits, then gives up with exit code 3", "[client][redis]") {
  ServiceUnderTest s;
  REQUIRE(s.client().post("/v1/locks/busy", {{"ttl_ms", 30000}}).status == 200);
  const auto started = std::chrono::steady_clock::now();
  const CliRun r = cli(s, {"run", "--wait", "300ms", "busy", "--", "true"});
  CHECK(r.exit_code == 3);
  CHECK(std::chrono::steady_clock::now() - started >= 300ms);
  CHECK_THAT(r.output, Catch::Contains("held by another lease"));
}

TEST_CASE("cli: run stops the command when the lease is lost and exits 4", "[client][redis]") {
  ServiceUnderTest s;
  const auto marker = s.dir.path() / "child.pid";
  std::thread killer = once_exists(marker, [&] {  // take the lock nodes' majority away
    for (std::size_t i = 0; i < 3; ++i) s.cluster.node(i).kill();
  });
  const CliRun r =
      cli(s, {"run", "--ttl", "600ms", "--grace", "200ms", "fragile", "--", "sh", "-c",
              "echo $$ > " + marker.string() +
                  "; trap 'echo got-term; exit 0' TERM; while true; do sleep 0.05; done"});
  killer.join();
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output, Catch::Contains("lost the lease"));
  CHECK_THAT(r.output, Catch::Contains("got-term"));
  const pid_t child = std::stoi(slurp(marker));
  CHECK(::kill(child, 0) != 0);  // the command is gone
}

TEST_CASE("cli: a command that ignores SIGTERM is killed after the grace period",
          "[client][redis]") {
  ServiceUnderTest s;
  const auto marker = s.dir.path() / "stubborn.pid";
  std::thread killer = once_exists(marker, [&] {  // take the lock nodes' majority away
    for (std::size_t i = 0; i < 3; ++i) s.cluster.node(i).kill();
  });
  const CliRun r =
      cli(s, {"run", "--ttl", "600ms", "--grace", "300ms", "stubborn", "--", "sh", "-c",
              "trap '' TERM; echo $$ > " + marker.string() + "; while true; do sleep 0.05; done"});
  killer.join();
  CHECK(r.exit_code == 4);
  CHECK(::kill(std::stoi(slurp(marker)), 0) != 0);
}

TEST_CASE("cli: a command that cannot start exits 127 and releases the lock", "[client][redis]") {
  ServiceUnderTest s;
  const CliRun r = cli(s, {"run", "gone", "--", "/nonexistent/command"});
  CHECK(r.exit_code == 127);
  // #35 item 4: which command, and why (it said only "cannot start the command").
  CHECK_THAT(r.output,
             Catch::Contains("cannot start '/nonexistent/command': No such file or directory"));
  CHECK(s.client().get("/v1/locks/gone").json()["held"] == false);
}

// #35 item 4: under cron a busy lock was exit 3 plus a line on stderr, which cron mails.
TEST_CASE("cli: run --skip-if-locked exits 0 without a word when the lock is held",
          "[client][redis]") {
  ServiceUnderTest s;
  REQUIRE(s.client().post("/v1/locks/nightly", {{"ttl_ms", 30000}}).status == 200);
  const CliRun skipped = cli(s, {"run", "--skip-if-locked", "nightly", "--", "echo", "ran"});
  CHECK(skipped.exit_code == 0);
  CHECK(skipped.output.empty());
  const CliRun free = cli(s, {"run", "--skip-if-locked", "other", "--", "echo", "ran"});
  CHECK(free.exit_code == 0);
  CHECK(free.output == "ran\n");
  CHECK(cli(s, {"status", "--skip-if-locked", "x"}).exit_code == 2);
}

// #35 item 4: after the command stopped for a lost lease, fencelock went on retrying the release
// against a hung fencelockd for 15 s.
TEST_CASE("cli: the release after the command gives up after a second against a hung service",
          "[client][redis]") {
  ServiceUnderTest s;
  const auto marker = s.dir.path() / "started";
  std::thread pauser = once_exists(marker, [&] { ::kill(s.daemon->pid(), SIGSTOP); });
  const auto started = std::chrono::steady_clock::now();
  const CliRun r = cli(s, {"run", "--ttl", "1s", "--grace", "200ms", "hung", "--", "sh", "-c",
                           "touch " + marker.string() + "; sleep 30"});
  const auto took = std::chrono::steady_clock::now() - started;
  pauser.join();
  ::kill(s.daemon->pid(), SIGCONT);
  CHECK(r.exit_code == 4);
  CHECK_THAT(r.output,
             Catch::Contains("lost the lease") && Catch::Contains("gave up after 1000 ms"));
  CHECK(took < 5s);  // ttl 1 s, grace 0.2 s, release 1 s: not the 15 s of retries
}

TEST_CASE("cli: acquire, extend, status, token and release print JSON for scripts",
          "[client][redis]") {
  ServiceUnderTest s;
  const CliRun acquired = cli(s, {"acquire", "--ttl", "30s", "--owner", "cron@build-3", "report"});
  REQUIRE(acquired.exit_code == 0);
  const json lease = first_json_line(acquired.output);
  REQUIRE(lease.is_object());
  CHECK(lease["name"] == "report");
  CHECK(lease["token"] == 1);
  const std::string lease_string = lease["lease"];

  CHECK(cli(s, {"acquire", "report"}).exit_code == 3);
  const CliRun extended =
      cli(s, {"extend", "--ttl", "1m", "report"}, 20s, {"FENCELOCK_LEASE=" + lease_string});
  CHECK(extended.exit_code == 0);
  CHECK(first_json_line(extended.output)["ttl_ms"] == 60000);

  const json status = first_json_line(cli(s, {"status", "report"}).output);
  CHECK(status["held"] == true);
  CHECK(status["token"] == 1);  // the holder's
  CHECK(status["owner"] == "cron@build-3");
  CHECK(status["last_token"] == 2);  // the refused acquire drew 2 before the nodes said no: a gap
  CHECK(first_json_line(cli(s, {"token", "--next", "report"}).output)["token"] == 3);
  CHECK(first_json_line(cli(s, {"token", "report"}).output)["token"] == 3);

  const CliRun released = cli(s, {"release", "report", lease_string});
  CHECK(released.exit_code == 0);
  CHECK(first_json_line(released.output)["released"] == true);
  CHECK(cli(s, {"extend", "report", lease_string}).exit_code == 4);
}

TEST_CASE("cli: revoke takes a held lock with a larger token and the old lease is gone",
          "[client][redis]") {
  ServiceUnderTest s;
  const json stuck = first_json_line(cli(s, {"acquire", "--ttl", "1h", "nightly"}).output);
  REQUIRE(stuck["token"] == 1);
  const CliRun revoked = cli(s, {"revoke", "--ttl", "30s", "--owner", "oncall", "nightly"});
  REQUIRE(revoked.exit_code == 0);
  const json lease = first_json_line(revoked.output);
  CHECK(lease["token"] == 2);
  CHECK(lease["ttl_ms"] == 30000);
  const json status = first_json_line(cli(s, {"status", "nightly"}).output);
  CHECK(status["token"] == 2);
  CHECK(status["owner"] == "oncall");
  CHECK(cli(s, {"extend", "nightly", stuck["lease"].get<std::string>()}).exit_code == 4);
  REQUIRE(cli(s, {"acquire", "other"}).exit_code == 0);
  const json listed = first_json_line(cli(s, {"list", "night"}).output);
  REQUIRE(listed["locks"].size() == 1);
  CHECK(listed["locks"][0]["name"] == "nightly");
  CHECK(listed["locks"][0]["token"] == 2);
  CHECK(listed["locks"][0]["owner"] == "oncall");
  CHECK(first_json_line(cli(s, {"list"}).output)["locks"].size() == 2);
  CHECK(cli(s, {"revoke", "--wait", "5s", "nightly"}).exit_code == 2);
  CHECK(cli(s, {"release", "nightly", lease["lease"].get<std::string>()}).exit_code == 0);
}

TEST_CASE("cli: list --semaphores and list --rwlocks print what is held as the status routes do",
          "[client][redis][rwlock]") {
  ServiceUnderTest s;
  REQUIRE(cli(s, {"acquire", "--permits", "2", "pool"}).exit_code == 0);
  REQUIRE(cli(s, {"acquire", "--permits", "1", "spare"}).exit_code == 0);
  const json reader = first_json_line(cli(s, {"acquire", "--read", "--owner", "r1", "doc"}).output);
  REQUIRE(reader["mode"] == "read");
  REQUIRE(cli(s, {"acquire", "--write", "draft"}).exit_code == 0);

  const CliRun semaphores = cli(s, {"list", "--semaphores", "po"});
  REQUIRE(semaphores.exit_code == 0);
  const json listed = first_json_line(semaphores.output);
  REQUIRE(listed["semaphores"].size() == 1);
  CHECK(listed["semaphores"][0] == json{{"name", "pool"}, {"permits", 2}, {"held", 1}});
  CHECK(listed["semaphores"][0] == first_json_line(cli(s, {"semaphore", "pool"}).output));
  CHECK(first_json_line(cli(s, {"list", "--semaphores"}).output)["semaphores"].size() == 2);

  const CliRun rwlocks = cli(s, {"list", "--rwlocks", "do"});
  REQUIRE(rwlocks.exit_code == 0);
  const json doc = first_json_line(rwlocks.output)["rwlocks"];
  REQUIRE(doc.size() == 1);
  CHECK(doc[0]["name"] == "doc");
  CHECK(doc[0]["mode"] == "read");
  CHECK(doc[0]["writer_waiting"] == false);
  REQUIRE(doc[0]["holders"].size() == 1);
  CHECK(doc[0]["holders"][0]["token"] == reader["token"]);
  CHECK(doc[0]["holders"][0]["owner"] == "r1");
  CHECK(doc[0]["holders"][0]["remaining_ms"].get<std::int64_t>() > 0);
  const json service = s.client().get("/v1/rwlocks/doc").json();
  CHECK(doc[0]["holders"][0]["token"] == service["holders"][0]["token"]);
  const json both = first_json_line(cli(s, {"list", "--rwlocks"}).output)["rwlocks"];
  REQUIRE(both.size() == 2);
  CHECK(std::set<std::string>{both[0]["name"].get<std::string>(),
                              both[1]["name"].get<std::string>()} ==
        std::set<std::string>{"doc", "draft"});

  CHECK(first_json_line(cli(s, {"list"}).output)["locks"].empty());  // none of them is a lock
  CHECK(cli(s, {"list", "--semaphores", "--rwlocks"}).exit_code == 2);
}

TEST_CASE("cli: list --limit N prints at most N entries and says when there may be more",
          "[client][redis]") {
  ServiceUnderTest s;
  for (int i = 0; i < 5; ++i)
    REQUIRE(cli(s, {"acquire", "job-" + std::to_string(i)}).exit_code == 0);
  const json two = first_json_line(cli(s, {"list", "--limit", "2", "job-"}).output);
  CHECK(two["locks"].size() == 2);
  CHECK(two["truncated"] == true);
  const json all = first_json_line(cli(s, {"list", "--limit", "5", "job-"}).output);
  CHECK(all["locks"].size() == 5);
  const json more = first_json_line(cli(s, {"list", "--limit", "50", "job-"}).output);
  CHECK(more["locks"].size() == 5);
  CHECK_FALSE(more.contains("truncated"));
  CHECK(first_json_line(cli(s, {"list", "--semaphores", "--limit", "1"}).output)["semaphores"]
            .empty());
}

TEST_CASE("cli: usage errors exit 2 and an unreachable service exits 5", "[client][redis]") {
  ServiceUnderTest s;
  CHECK(cli(s, {"status"}).exit_code == 2);
  CHECK(cli(s, {"acquire", "--ttl", "30", "x"}).exit_code == 2);
  const CliRun help = cli(s, {"--help"});
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.output, Catch::Contains("Exit codes"));
  const CliRun down =
      cli(s, {"--endpoint", "http://127.0.0.1:" + std::to_string(pick_free_port()), "status", "x"});
  CHECK(down.exit_code == 5);
}

TEST_CASE("cli: --cacert, --cert or --key with an http:// endpoint exit 2 and send nothing",
          "[client][redis]") {
  ServiceUnderTest s;
  const CliRun flag = cli(s, {"--cacert", "/etc/ssl/certs/ca-certificates.crt", "status", "plain"},
                          20s, {"FENCELOCK_API_KEY=flk_never_sent"});
  CHECK(flag.exit_code == 2);  // was 0: the request and its API key went over plain HTTP
  CHECK_THAT(flag.output, Catch::Contains("is plain HTTP"));
  CHECK_THAT(flag.output, Catch::Contains("use https://"));
  const CliRun environment = cli(s, {"status", "plain"}, 20s, {"FENCELOCK_CACERT=/ca.pem"});
  CHECK(environment.exit_code == 2);
  CHECK(s.daemon->log().find("name=plain") == std::string::npos);
}

TEST_CASE("cli: --wait longer than the service's --max-wait keeps asking until the lock is free",
          "[client][redis]") {
  ServiceUnderTest s({"--max-wait", "300ms"});
  REQUIRE(s.client().post("/v1/locks/long", {{"ttl_ms", 1500}}).status == 200);
  const auto started = std::chrono::steady_clock::now();
  const CliRun waited = cli(s, {"-v", "acquire", "--wait", "1h", "long"});  // was: 400, exit 2
  CHECK(waited.exit_code == 0);
  CHECK(std::chrono::steady_clock::now() - started >= 1s);
  // Above the holder's 1; each refused attempt of the wait drew one too (gaps).
  CHECK(json_line_among(waited.output).value("token", 0) >= 2);
  CHECK_THAT(waited.output, Catch::Contains("the service waits at most 0.3s per request"));

  REQUIRE(s.client().post("/v1/locks/short", {{"ttl_ms", 30000}}).status == 200);
  const CliRun gave_up = cli(s, {"acquire", "--wait", "1s", "short"});
  CHECK(gave_up.exit_code == 3);
}

TEST_CASE("cli: --wait forever waits past one request's wait", "[client][redis]") {
  ServiceUnderTest s({"--max-wait", "200ms"});
  REQUIRE(s.client().post("/v1/locks/patient", {{"ttl_ms", 1000}}).status == 200);
  const CliRun r = cli(s, {"run", "--wait", "forever", "patient", "--", "true"});
  CHECK(r.exit_code == 0);
  CHECK(s.client().get("/v1/locks/patient").json()["last_token"] >= 2);  // refused attempts: gaps
}

TEST_CASE("cli: run without a command holds the lock, renewing it, until SIGTERM or SIGINT",
          "[client][redis]") {
  ServiceUnderTest s;
  const int signal_number = GENERATE(SIGTERM, SIGINT);
  const auto out = s.dir.path() / "hold.out";
  ChildProcess holder;
  holder.start({cli_binary(), "-v", "run", "--ttl", "600ms", "held"}, out,
               {"FENCELOCK_ENDPOINT=" + s.endpoint(), "FENCELOCK_API_KEY=flk_not_shown"});
  const auto limit = std::chrono::steady_clock::now() + 10s;
  while (slurp(out).find("\"token\":1") == std::string::npos &&
         std::chrono::steady_clock::now() < limit)
    std::this_thread::sleep_for(5ms);
  std::this_thread::sleep_for(1500ms);  // more than two ttls: only renewal keeps it
  CHECK(s.client().get("/v1/locks/held").json()["held"] == true);
  CHECK(holder.stop(signal_number, 10s) == 0);
  CHECK(s.client().get("/v1/locks/held").json()["held"] == false);
  const std::string output = slurp(out);
  CHECK_THAT(output, Catch::Contains("{\"name\":\"held\",\"token\":1,\"ttl_ms\":600}"));
  CHECK_THAT(output, Catch::Contains("renewed 'held'"));
  CHECK(output.find("flk_not_shown") == std::string::npos);
  CHECK(output.find("\"lease\"") == std::string::npos);
}

TEST_CASE("cli: release of a lease that is gone exits 4", "[client][redis]") {
  ServiceUnderTest s;
  const json lease = first_json_line(cli(s, {"acquire", "--ttl", "30s", "gone"}).output);
  const std::string lease_string = lease["lease"];
  REQUIRE(cli(s, {"release", "gone", lease_string}).exit_code == 0);
  const CliRun again = cli(s, {"release", "gone", lease_string});
  CHECK(again.exit_code == 4);
  CHECK(first_json_line(again.output)["released"] == false);
  CHECK_THAT(again.output, Catch::Contains("no longer held the lock"));
}

TEST_CASE("cli: several endpoints fail over to one that answers, and -v never shows secrets",
          "[client][redis]") {
  ServiceUnderTest s;
  const std::string dead = "http://127.0.0.1:" + std::to_string(pick_free_port());
  for (const auto& list : {dead + "," + dead + "," + s.endpoint(), s.endpoint() + "," + dead}) {
    const CliRun acquired =
        cli(s, {"-v", "--endpoint", list, "acquire", "--ttl", "30s", "--wait", "1h30m", "multi"},
            20s, {"FENCELOCK_API_KEY=flk_not_shown"});
    REQUIRE(acquired.exit_code == 0);
    const std::string lease_string = json_line_among(acquired.output).value("lease", "");
    REQUIRE_FALSE(lease_string.empty());
    CHECK_THAT(acquired.output, Catch::Contains("fencelock: acquired 'multi' with token"));
    CHECK(acquired.output.find("flk_not_shown") == std::string::npos);
    const CliRun released = cli(s, {"-v", "--endpoint", list, "release", "multi"}, 20s,
                                {"FENCELOCK_LEASE=" + lease_string});
    CHECK(released.exit_code == 0);
    CHECK(released.output.find(lease_string) == std::string::npos);  // stdout has no lease either
  }
}

TEST_CASE("cli: run --name a --name b holds a lock set and gives the command a token per name",
          "[client][redis]") {
  ServiceUnderTest s;
  REQUIRE(s.client().post("/v1/tokens/b", json::object()).status == 200);  // b's counter is at 1
  const CliRun r = cli(s, {"run", "--ttl", "5s", "b", "--name", "a", "--", "sh", "-c",
                           "echo \"names=$FENCELOCK_NAMES tokens=$FENCELOCK_TOKENS "
                           "name=${FENCELOCK_NAME:-none} token=${FENCELOCK_TOKEN:-none} "
                           "lease=${FENCELOCK_LEASE:-none}\"; exit 5"});
  CHECK(r.exit_code == 5);
  CHECK_THAT(r.output, Catch::Contains("names=a,b tokens=a=1,b=2 name=none token=none lease=none"));
  CHECK(s.client().get("/v1/locks/a").json()["held"] == false);
  CHECK(s.client().get("/v1/locks/b").json()["held"] == false);
}

TEST_CASE("cli: run of a lock set with a held name exits 3 and takes none of the names",
          "[client][redis]") {
  ServiceUnderTest s;
  REQUIRE(s.client().post("/v1/locks/b", {{"ttl_ms", 30000}}).status == 200);
  const CliRun r = cli(s, {"run", "--name", "a", "--name", "b", "--", "true"});
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.output, Catch::Contains("held by another lease"));
  CHECK(s.client().get("/v1/locks/a").json()["held"] == false);
}

TEST_CASE("cli: run --permits N gives the command its slot, and a full semaphore exits 3",
          "[client][redis]") {
  ServiceUnderTest s;
  REQUIRE(s.client().post("/v1/semaphores/pool", {{"permits", 2}, {"ttl_ms", 30000}}).status ==
          200);
  const CliRun r = cli(s, {"run", "--permits", "2", "pool", "--", "sh", "-c",
                           "echo \"name=$FENCELOCK_NAME token=$FENCELOCK_TOKEN "
                           "slot=$FENCELOCK_SLOT permits=$FENCELOCK_PERMITS\""});
  CHECK(r.exit_code == 0);
  // Above the holder's 1 (an attempt refused on the held slot may have drawn one before it).
  CHECK_THAT(r.output, Catch::Matches("name=pool token=[23] slot=[01] permits=2\\s*"));
  CHECK_THAT(r.output, Catch::Contains(" permits=2"));
  CHECK(s.client().get("/v1/semaphores/pool").json()["held"] == 1);

  REQUIRE(s.client().post("/v1/semaphores/pool", {{"permits", 2}, {"ttl_ms", 30000}}).status ==
          200);
  const CliRun full = cli(s, {"run", "--permits", "2", "--wait", "200ms", "pool", "--", "true"});
  CHECK(full.exit_code == 3);
  CHECK_THAT(full.output, Catch::Contains("every permit of 'pool' is held"));

  const CliRun mismatch = cli(s, {"run", "--permits", "3", "pool", "--", "true"});
  CHECK(mismatch.exit_code == 8);
}

TEST_CASE("cli: run --read shares a read/write lock, run --write waits for the readers",
          "[client][redis][rwlock]") {
  ServiceUnderTest s;
  const json reader =
      s.client().post("/v1/rwlocks/doc", {{"mode", "read"}, {"ttl_ms", 30000}}).json();
  const CliRun shared = cli(s, {"run", "--read", "doc", "--", "sh", "-c",
                                "echo \"mode=$FENCELOCK_MODE token=$FENCELOCK_TOKEN\""});
  CHECK(shared.exit_code == 0);
  CHECK_THAT(shared.output, Catch::Matches("mode=read token=[0-9]+\\s*"));
  const CliRun busy = cli(s, {"run", "--write", "--wait", "200ms", "doc", "--", "true"});
  CHECK(busy.exit_code == 3);
  const CliRun both = cli(s, {"run", "--read", "--write", "doc", "--", "true"});
  CHECK(both.exit_code == 2);
  const CliRun with_set = cli(s, {"acquire", "--read", "doc", "--name", "other"});
  CHECK(with_set.exit_code == 2);

  const CliRun acquired = cli(s, {"acquire", "--read", "doc"});
  REQUIRE(acquired.exit_code == 0);
  const json grant = first_json_line(acquired.output);
  CHECK(grant["mode"] == "read");
  const std::string lease = grant["lease"];
  CHECK(cli(s, {"extend", "--read", "--ttl", "1m", "doc", lease}).exit_code == 0);
  CHECK(cli(s, {"release", "--write", "doc", lease}).exit_code != 0);  // not a write grant
  CHECK(cli(s, {"release", "--read", "doc", lease}).exit_code == 0);
  REQUIRE(s.client().del("/v1/rwlocks/doc", {{"lease", reader["lease"]}}).json()["released"] ==
          true);
  const CliRun writer =
      cli(s, {"run", "--write", "doc", "--", "sh", "-c", "echo \"mode=$FENCELOCK_MODE\""});
  CHECK(writer.exit_code == 0);
  CHECK_THAT(writer.output, Catch::Contains("mode=write"));
}

TEST_CASE("cli: acquire, extend and release a lock set and a permit for scripts",
          "[client][redis]") {
  ServiceUnderTest s;
  const CliRun set = cli(s, {"acquire", "--ttl", "30s", "--name", "y", "--name", "x"});
  REQUIRE(set.exit_code == 0);
  const json set_json = first_json_line(set.output);
  CHECK(set_json["names"] == json::array({"x", "y"}));
  CHECK(set_json["tokens"] == json{{"x", 1}, {"y", 1}});
  const std::string set_lease = set_json["lease"];
  const CliRun extended = cli(s, {"extend", "--ttl", "1m", "--name", "x", "--name", "y"}, 20s,
                              {"FENCELOCK_LEASE=" + set_lease});
  CHECK(extended.exit_code == 0);
  CHECK(first_json_line(extended.output)["names"] == json::array({"x", "y"}));
  CHECK(s.client().get("/v1/locks/y").json()["remaining_ms"] > 40000);
  const CliRun released = cli(s, {"release", "--name", "y", "--name", "x", set_lease});
  CHECK(released.exit_code == 0);
  CHECK(first_json_line(released.output)["released"] == true);
  CHECK(s.client().get("/v1/locks/x").json()["held"] == false);

  const CliRun permit = cli(s, {"acquire", "--permits", "3", "slots"});
  REQUIRE(permit.exit_code == 0);
  const json permit_json = first_json_line(permit.output);
  CHECK(permit_json["permits"] == 3);
  CHECK(permit_json["slot"] < 3);
  const std::string permit_lease = permit_json["lease"];
  CHECK(cli(s, {"semaphore", "slots"}).output.find("\"held\":1") != std::string::npos);
  CHECK(cli(s, {"extend", "--permits", "3", "slots", permit_lease}).exit_code == 0);
  CHECK(cli(s, {"release", "--permits", "2", "slots", permit_lease}).exit_code == 2);
  CHECK(cli(s, {"release", "--permits", "3", "slots", permit_lease}).exit_code == 0);
  CHECK(cli(s, {"release", "--permits", "3", "slots", permit_lease}).exit_code == 4);
}

TEST_CASE("cli: a lock set with a duplicate or too many names is refused before any request",
          "[client][redis]") {
  ServiceUnderTest s;
  const CliRun twice = cli(s, {"run", "--name", "a", "--name", "a", "--", "true"});
  CHECK(twice.exit_code == 2);
  CHECK_THAT(twice.output, Catch::Contains("'a' is named twice"));
  CHECK(cli(s, {"run", "--permits", "65", "p", "--", "true"}).exit_code == 2);
  CHECK(s.client().get("/v1/tokens/a").json()["token"] == 0);  // nothing was acquired
}

TEST_CASE("cli: watch waits for the holder's lease to end, or exits 3 when --wait runs out",
          "[client][redis][watch]") {
  ServiceUnderTest s;
  const json held = first_json_line(cli(s, {"acquire", "--ttl", "1h", "deploy"}).output);
  REQUIRE(held["token"] == 1);

  const CliRun unchanged = cli(s, {"watch", "--wait", "300ms", "deploy"});
  CHECK(unchanged.exit_code == 3);
  const json same = first_json_line(unchanged.output);
  CHECK(same["changed"] == false);
  CHECK(same["token"] == 1);

  CliRun released;
  std::thread watcher([&] { released = cli(s, {"watch", "--wait", "20s", "deploy"}); });
  std::this_thread::sleep_for(500ms);
  const auto started = std::chrono::steady_clock::now();
  CHECK(cli(s, {"release", "deploy", held["lease"].get<std::string>()}).exit_code == 0);
  watcher.join();
  CHECK(std::chrono::steady_clock::now() - started < 10s);
  CHECK(released.exit_code == 0);
  const json after = first_json_line(released.output);
  CHECK(after["changed"] == true);
  CHECK(after["held"] == false);

  CHECK(cli(s, {"watch", "--token", "7", "deploy"}).exit_code == 0);  // free: at once
  CHECK(cli(s, {"watch", "--token", "x", "deploy"}).exit_code == 2);
  CHECK(cli(s, {"status", "--token", "1", "deploy"}).exit_code == 2);
}

TEST_CASE(
    "cli: watch keeps asking until --wait has passed when the service's --max-wait is shorter",
    "[client][redis][watch]") {
  ServiceUnderTest s({"--max-wait", "1s"});
  REQUIRE(cli(s, {"acquire", "--ttl", "1h", "nightly"}).exit_code == 0);
  const auto started = std::chrono::steady_clock::now();
  const CliRun unchanged = cli(s, {"watch", "--wait", "2500ms", "nightly"});
  CHECK(unchanged.exit_code == 3);
  CHECK(std::chrono::steady_clock::now() - started >= 2500ms);
  CHECK(first_json_line(unchanged.output)["changed"] == false);
}
