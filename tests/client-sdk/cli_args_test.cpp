#include "cli_args.h"

#include <catch2/catch.hpp>
#include <map>

using namespace fencelock::cli;
using namespace std::chrono_literals;

namespace {
fencelock::Result<CliArgs> parse(std::vector<std::string> args,
                                 std::optional<std::string> endpoint = std::nullopt,
                                 std::optional<std::string> lease = std::nullopt) {
  return parse_cli(args, endpoint, lease);
}
}  // namespace

TEST_CASE("cli: run takes its options, a name and the command after --", "[client]") {
  auto a = parse({"--endpoint", "http://127.0.0.1:9", "run", "--ttl", "2m", "--wait=10s", "--grace",
                  "500ms", "jobs", "--", "sh", "-c", "echo --ttl"});
  REQUIRE(a.ok());
  CHECK(a->command == Command::kRun);
  CHECK(a->endpoint == "http://127.0.0.1:9");
  CHECK(a->ttl == 120s);
  CHECK(a->wait == 10s);
  CHECK(a->grace == 500ms);
  CHECK(a->name == "jobs");
  CHECK(a->command_line == std::vector<std::string>{"sh", "-c", "echo --ttl"});
}

TEST_CASE("cli: the endpoint and the lease may come from the environment", "[client]") {
  auto a = parse({"release", "jobs"}, "http://127.0.0.1:7777", "5.abc");
  REQUIRE(a.ok());
  CHECK(a->endpoint == "http://127.0.0.1:7777");
  CHECK(a->lease == "5.abc");
  CHECK(
      parse({"--endpoint", "http://127.0.0.1:1", "status", "x"}, "http://127.0.0.1:2")->endpoint ==
      "http://127.0.0.1:1");
  CHECK(parse({"extend", "jobs", "7.def"}, std::nullopt, "5.abc")->lease == "7.def");
  CHECK(parse({"token", "--next", "jobs"})->next_token);
}

TEST_CASE("cli: bad command lines are refused with a message", "[client]") {
  const auto [args, message] = GENERATE(table<std::vector<std::string>, std::string>({
      {std::vector<std::string>{}, "missing command"},
      {{"frob", "x"}, "unknown command 'frob'"},
      {{"status"}, "missing NAME"},
      {{"status", "a", "b"}, "unexpected argument 'b'"},
      {{"acquire", "--ttl", "30", "x"}, "--ttl: expected a duration"},
      {{"acquire", "--ttl"}, "--ttl: needs a value"},
      {{"acquire", "--color", "red", "x"}, "unknown option --color"},
      {{"acquire", "--wait", "1m1h", "x"},
       "--wait: expected a duration like 500ms, 30s, 2m or 1h30m"},
      {{"acquire", "--wait", "never", "x"}, "--wait: expected a duration"},
      {{"status", "x", "--", "ls"}, "only for run"},
      {{"release", "x"}, "missing LEASE"},
      {{"status", "--next", "x"}, "--next is only for token"},
      {{"run", "--ttl", "30s", "x", "echo", "hi"},
       "unexpected argument 'echo' (the command goes after '--': fencelock run [options] NAME -- "
       "echo ...)"},
      {{"acquire", "--skip-if-locked", "x"}, "--skip-if-locked is only for run"},
  }));
  auto parsed = parse(args);
  REQUIRE_FALSE(parsed.ok());
  CHECK_THAT(parsed.error().message, Catch::Contains(message));
}

TEST_CASE("cli: help and version need nothing else", "[client]") {
  CHECK(parse({"--help"})->command == Command::kHelp);
  CHECK(parse({"run", "-h"})->command == Command::kHelp);
  CHECK(parse({"--version"})->command == Command::kVersion);
  CHECK_THAT(cli_usage(), Catch::Contains("Exit codes"));
}

TEST_CASE("cli: the API key and the TLS files come from flags, else from the environment",
          "[client]") {
  const std::map<std::string, std::string> environment = {{"FENCELOCK_API_KEY", "flk_env"},
                                                          {"FENCELOCK_CACERT", "/env/ca.pem"},
                                                          {"FENCELOCK_CERT", "/env/me.pem"},
                                                          {"FENCELOCK_KEY", ""}};
  auto env = [&environment](const char* name) -> std::optional<std::string> {
    const auto found = environment.find(name);
    if (found == environment.end()) return std::nullopt;
    return found->second;
  };
  auto a = parse({"--endpoint", "https://localhost:8443", "--cacert", "/flag/ca.pem", "--key",
                  "/flag/me.key", "status", "x"});
  REQUIRE(a.ok());
  fill_from_environment(a.value(), env);
  CHECK(a->endpoint == "https://localhost:8443");
  CHECK(a->cacert == "/flag/ca.pem");  // the flag wins
  CHECK(a->cert == "/env/me.pem");
  CHECK(a->key == "/flag/me.key");
  CHECK(a->api_key == "flk_env");
  auto b = parse({"status", "x"});
  fill_from_environment(b.value(), env);
  CHECK(b->key.empty());  // set to "": unset
}

TEST_CASE("cli: a TLS failure has an exit code of its own", "[client]") {
  const fencelock::Error tls{fencelock::ErrorCode::kTls, "certificate verify failed", 0, {}};
  const fencelock::Error transport{fencelock::ErrorCode::kTransport, "refused", 0, {}};
  CHECK(exit_code_for(tls) == kExitTls);
  CHECK(exit_code_for(transport) == kExitUnavailable);
  CHECK_THAT(cli_usage(), Catch::Contains("  7  TLS failed"));
}

TEST_CASE(
    "cli: TLS files with an http:// endpoint are a usage error, from flags or the environment",
    "[client]") {
  const auto [args, environment] =
      GENERATE(table<std::vector<std::string>, std::map<std::string, std::string>>({
          {{"--cacert", "/ca.pem", "status", "x"}, {}},
          {{"--cert", "/me.pem", "--key", "/me.key", "status", "x"}, {}},
          {{"status", "x"}, {{"FENCELOCK_CACERT", "/ca.pem"}}},
          {{"status", "x"}, {{"FENCELOCK_KEY", "/me.key"}}},
      }));
  auto env = [&environment](const char* name) -> std::optional<std::string> {
    const auto found = environment.find(name);
    if (found == environment.end()) return std::nullopt;
    return found->second;
  };
  auto plain = parse(args, "http://127.0.0.1:8080");
  REQUIRE(plain.ok());
  fill_from_environment(plain.value(), env);
  const auto refused = check_tls_files(plain.value());
  REQUIRE_FALSE(refused.ok());
  CHECK(exit_code_for(refused.error()) == kExitUsage);
  CHECK_THAT(refused.error().message,
             Catch::Contains("are for https:// endpoints: 'http://127.0.0.1:8080' is plain HTTP"));
  auto secure = parse(args, "https://127.0.0.1:8443");
  fill_from_environment(secure.value(), env);
  CHECK(check_tls_files(secure.value()).ok());
  auto without = parse({"status", "x"}, "http://127.0.0.1:8080");
  CHECK(check_tls_files(without.value()).ok());
}

TEST_CASE("cli: durations take h, m, s and ms, largest unit first", "[client]") {
  const auto [text, expected] =
      GENERATE(table<std::string, std::optional<std::chrono::milliseconds>>({
          {"500ms", 500ms},
          {"30s", 30s},
          {"2m", 2min},
          {"1h", 1h},
          {"1h30m", 90min},
          {"1m30s", 90s},
          {"2h0m5s250ms", 2h + 5s + 250ms},
          {"0s", 0ms},
          {"2400h", 2400h},
          {"2401h", std::nullopt},  // beyond 100 days
          {"30", std::nullopt},
          {"1m1h", std::nullopt},
          {"1h1h", std::nullopt},
          {"1.5h", std::nullopt},
          {"h", std::nullopt},
          {"", std::nullopt},
          {"-1s", std::nullopt},
          {"1d", std::nullopt},
          {"9999999999999s", std::nullopt},
      }));
  CHECK(parse_cli_duration(text) == expected);
}

TEST_CASE("cli: --wait takes any length or forever, and run without a command holds the lock",
          "[client]") {
  auto forever = parse({"run", "--wait", "forever", "jobs"});
  REQUIRE(forever.ok());
  CHECK(forever->wait_forever);
  CHECK(forever->command_line.empty());
  auto later = parse({"acquire", "--wait", "forever", "--wait", "5m", "jobs"});
  CHECK_FALSE(later->wait_forever);  // the last --wait wins
  CHECK(later->wait == 5min);
  CHECK(parse({"run", "x", "--"})->command_line.empty());
}

TEST_CASE("cli: several endpoints are comma-separated, each checked for TLS files", "[client]") {
  auto a = parse({"-v", "--endpoint", "https://127.0.0.1:1,,https://127.0.0.1:2", "status", "x"});
  REQUIRE(a.ok());
  CHECK(a->verbose);
  CHECK(endpoints_of(a.value()) ==
        std::vector<std::string>{"https://127.0.0.1:1", "https://127.0.0.1:2"});
  a->cacert = "/ca.pem";
  CHECK(check_tls_files(a.value()).ok());
  a->endpoint = "https://127.0.0.1:1,http://127.0.0.1:2";
  const auto refused = check_tls_files(a.value());
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Catch::Contains("'http://127.0.0.1:2' is plain HTTP"));
}

TEST_CASE("cli: release of a lease that is gone has the not-held exit code, documented",
          "[client]") {
  CHECK_THAT(cli_usage(), Catch::Contains("exits 4 when the lease no longer held the lock"));
  CHECK_THAT(cli_usage(), Catch::Contains("4  not held: extend or release found the lease gone"));
}

TEST_CASE("cli: --name makes a lock set, with or without the positional NAME", "[client]") {
  auto a = parse({"run", "--name", "a", "--name", "b", "--", "true"});
  REQUIRE(a.ok());
  CHECK(a->names == std::vector<std::string>{"a", "b"});
  CHECK(a->name == "a,b");
  CHECK(lease_kind_of(a.value()) == fencelock::LeaseKind::kSet);
  CHECK(a->command_line == std::vector<std::string>{"true"});

  auto b = parse({"acquire", "--ttl", "10s", "c", "--name", "a"});
  REQUIRE(b.ok());
  CHECK(b->names == std::vector<std::string>{"c", "a"});
  CHECK(lease_kind_of(b.value()) == fencelock::LeaseKind::kSet);

  auto one = parse({"run", "--name", "solo"});
  REQUIRE(one.ok());
  CHECK(lease_kind_of(one.value()) == fencelock::LeaseKind::kLock);
  CHECK(one->name == "solo");
}

TEST_CASE("cli: extend and release of a lock set take every name with --name", "[client]") {
  auto a = parse({"extend", "--name", "b", "--name", "a", "17,4.ab"});
  REQUIRE(a.ok());
  CHECK(a->names == std::vector<std::string>{"b", "a"});
  CHECK(a->lease == "17,4.ab");
  auto b = parse({"release", "--name", "b", "--name", "a"}, std::nullopt, "17,4.ab");
  REQUIRE(b.ok());
  CHECK(b->lease == "17,4.ab");
  auto c = parse({"release", "--name", "b", "a", "17,4.ab"});
  REQUIRE_FALSE(c.ok());
  CHECK_THAT(c.error().message, Catch::Contains("take every name with --name"));
}

TEST_CASE("cli: --permits makes NAME a counting semaphore", "[client]") {
  auto a = parse({"run", "--permits", "3", "pool", "--", "true"});
  REQUIRE(a.ok());
  CHECK(a->permits == 3u);
  CHECK(a->name == "pool");
  CHECK(lease_kind_of(a.value()) == fencelock::LeaseKind::kPermit);
  CHECK(parse({"acquire", "--permits=64", "pool"})->permits == 64u);
  CHECK(parse({"release", "--permits", "1", "pool", "9.ab.1.0"})->permits == 1u);
  CHECK(parse({"semaphore", "pool"})->command == Command::kSemaphore);
}

TEST_CASE("cli: --read and --write make NAME a read/write lock, one mode at a time", "[client]") {
  CHECK(lease_kind_of(parse({"run", "--read", "doc", "--", "true"}).value()) ==
        fencelock::LeaseKind::kRead);
  CHECK(lease_kind_of(parse({"acquire", "--write", "doc"}).value()) ==
        fencelock::LeaseKind::kWrite);
  CHECK(lease_kind_of(parse({"release", "--read", "--read", "doc", "9.ab.r"}).value()) ==
        fencelock::LeaseKind::kRead);
  for (const auto& both :
       {std::vector<std::string>{"run", "--read", "--write", "doc"},
        std::vector<std::string>{"acquire", "--write", "--read", "doc"},
        std::vector<std::string>{"acquire", "--write", "--read", "--write", "doc"}}) {
    const auto refused = parse(both);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().message.find("choose one") != std::string::npos);
  }
  CHECK_FALSE(parse({"status", "--read", "doc"}).ok());
  CHECK_FALSE(parse({"acquire", "--read", "--permits", "2", "doc"}).ok());
}

TEST_CASE("cli: list takes --semaphores or --rwlocks, one at a time, and an optional PREFIX",
          "[client]") {
  auto locks = parse({"list"});
  REQUIRE(locks.ok());
  CHECK(locks->list_kind == ListKind::kLocks);
  CHECK(locks->name.empty());
  auto semaphores = parse({"list", "--semaphores", "pool"});
  REQUIRE(semaphores.ok());
  CHECK(semaphores->command == Command::kList);
  CHECK(semaphores->list_kind == ListKind::kSemaphores);
  CHECK(semaphores->name == "pool");
  CHECK(parse({"list", "doc", "--rwlocks"})->list_kind == ListKind::kRwLocks);
  CHECK(parse({"--rwlocks", "list"})->list_kind == ListKind::kRwLocks);
  CHECK_FALSE(locks->list_limit);
  CHECK(parse({"list", "--limit", "5", "job"})->list_limit == std::optional<std::size_t>(5));
  CHECK(parse({"list", "--rwlocks", "--limit=10000000"})->list_limit ==
        std::optional<std::size_t>(10'000'000));
  CHECK_THAT(cli_usage(), Catch::Contains("list [--limit N] [PREFIX]"));
  CHECK_THAT(cli_usage(), Catch::Contains("list --semaphores [PREFIX]"));
  CHECK_THAT(cli_usage(), Catch::Contains("list --rwlocks [PREFIX]"));

  const auto [args, message] = GENERATE(table<std::vector<std::string>, std::string>({
      {{"list", "--semaphores", "--rwlocks"}, "--semaphores and --rwlocks: choose one"},
      {{"status", "--semaphores", "pool"}, "--semaphores and --rwlocks are only for list"},
      {{"acquire", "--rwlocks", "doc"}, "--semaphores and --rwlocks are only for list"},
      {{"list", "--rwlocks", "a", "b"}, "unexpected argument 'b'"},
      {{"list", "--limit", "0"}, "--limit: expected a whole number from 1 to 10000000, got '0'"},
      {{"list", "--limit", "10000001"}, "--limit: expected a whole number from 1 to 10000000"},
      {{"list", "--limit", "5x"}, "--limit: expected a whole number from 1 to 10000000"},
      {{"status", "--limit", "5", "job"}, "--limit is only for list"},
  }));
  auto parsed = parse(args);
  REQUIRE_FALSE(parsed.ok());
  CHECK(exit_code_for(parsed.error()) == kExitUsage);
  CHECK_THAT(parsed.error().message, Catch::Contains(message));
}

TEST_CASE("cli: lock sets and permits out of bounds are refused before any request", "[client]") {
  std::vector<std::string> seventeen = {"run"};
  for (int i = 0; i < 17; ++i) {
    seventeen.push_back("--name");
    seventeen.push_back("n" + std::to_string(i));
  }
  const auto [args, message] = GENERATE_COPY(table<std::vector<std::string>, std::string>({
      {seventeen, "at most 16 names, got 17"},
      {{"run", "a", "--name", "b", "--name", "a"}, "'a' is named twice"},
      {{"acquire", "--name", "a", "--name", "bad name"}, "'bad name': name must be"},
      {{"acquire", "--name", "a", "--name", ".."}, "'..': name must be"},
      {{"run", "--permits", "0", "pool"}, "--permits: expected a whole number from 1 to 64"},
      {{"run", "--permits", "65", "pool"}, "--permits: expected a whole number from 1 to 64"},
      {{"run", "--permits", "3x", "pool"}, "--permits: expected a whole number"},
      {{"run", "--permits", "-1", "pool"}, "--permits: expected a whole number"},
      {{"run", "--permits", "", "pool"}, "--permits: expected a whole number"},
      {{"run", "--permits", "2", "a", "--name", "b"}, "--permits takes one semaphore NAME"},
      {{"status", "--name", "a", "b"}, "--name is only for run, acquire, extend and release"},
      {{"token", "--permits", "2", "a"}, "--permits is only for"},
      {{"semaphore", "--permits", "2", "a"}, "--permits is only for"},
      {{"run", "--name"}, "--name: needs a value"},
  }));
  auto parsed = parse(args);
  REQUIRE_FALSE(parsed.ok());
  CHECK(exit_code_for(parsed.error()) == kExitUsage);
  CHECK_THAT(parsed.error().message, Catch::Contains(message));
}

TEST_CASE("cli: a lock set of 16 names is accepted", "[client]") {
  std::vector<std::string> sixteen = {"acquire"};
  for (int i = 0; i < 16; ++i) {
    sixteen.push_back("--name");
    sixteen.push_back("n" + std::to_string(i));
  }
  auto a = parse(sixteen);
  REQUIRE(a.ok());
  CHECK(a->names.size() == 16);
}

TEST_CASE("cli: a permits mismatch has an exit code of its own, documented", "[client]") {
  const fencelock::Error mismatch{fencelock::ErrorCode::kPermitsMismatch, "live with 5", 409, {}};
  CHECK(exit_code_for(mismatch) == kExitPermitsMismatch);
  CHECK_THAT(cli_usage(), Catch::Contains("  8  permits mismatch"));
  CHECK_THAT(cli_usage(), Catch::Contains("FENCELOCK_TOKENS=\"a=17,b=4\""));
  CHECK_THAT(cli_usage(), Catch::Contains("FENCELOCK_SLOT"));
}
