#include "app/config.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <fstream>
#include <map>

#include "temp_dir.h"

using namespace std::chrono_literals;
using namespace fencelock::service;
using fencelock::storage::EngineOptions;
using fencelock::testing::TempDir;

namespace {

using Variables = std::map<std::string, std::string>;
using Args = std::vector<std::string>;

Environment environment(Variables variables) {
  return [variables = std::move(variables)](std::string_view name) -> std::optional<std::string> {
    const auto found = variables.find(std::string(name));
    if (found == variables.end()) return std::nullopt;
    return found->second;
  };
}

fencelock::service::ServiceResult<ParsedConfig> parse(const Args& args, Variables variables = {}) {
  return parse_config(args, environment(std::move(variables)));
}

ParsedConfig accepted(const Args& args, Variables variables = {}) {
  auto parsed = parse(args, std::move(variables));
  INFO((parsed.ok() ? std::string("accepted") : parsed.error().message));
  REQUIRE(parsed.ok());
  return std::move(parsed).value();
}

// The error message, after checking it is on one line.
std::string refusal(const Args& args, Variables variables = {}) {
  const auto parsed = parse(args, std::move(variables));
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.error().message.find('\n') == std::string::npos);
  return parsed.error().message;
}

// The value describe() shows for `flag`, e.g. shown(config, "threads") == "1".
std::string shown(const ServiceConfig& config, const std::string& flag) {
  const std::string line = " " + describe(config) + " ";
  const std::size_t start = line.find(" " + flag + "=");
  if (start == std::string::npos) return "<missing>";
  const std::size_t value = start + flag.size() + 2;
  return line.substr(value, line.find(' ', value) - value);
}

std::string write_file(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::filesystem::path path = dir.path() / name;
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

// `args` plus the one flag every run needs.
Args with_redis(Args args) {
  args.insert(args.end(), {"--redis", "127.0.0.1:7000"});
  return args;
}

}  // namespace

TEST_CASE("with only --redis given, every setting has its documented default", "[service]") {
  const ParsedConfig parsed = accepted(with_redis({}));
  CHECK(parsed.command == Command::kRun);
  CHECK(parsed.sources.empty());
  const ServiceConfig& c = parsed.config;
  CHECK(c.listen.to_string() == "127.0.0.1:8080");
  REQUIRE(c.engine.nodes.size() == 1);
  CHECK(c.engine.nodes[0].to_string() == "127.0.0.1:7000");
  CHECK(c.token_backend == TokenBackend::kSqlite);
  CHECK(c.sqlite_path == "./fencelock-tokens.db");
  CHECK(c.token_epoch_file == "./fencelock-token-epoch");
  CHECK_FALSE(c.tokens_unsafe_persistence);
  CHECK(c.token_timeout == 100ms);
  CHECK(c.body_limit == std::size_t{64} * 1024);
  CHECK(c.threads == 1);
  CHECK(c.max_connections == 10'000);
  CHECK(c.idle_timeout == 60s);
  CHECK(c.shutdown_grace == 10s);
  const EngineOptions defaults;
  CHECK(c.engine.node_timeout == defaults.node_timeout);
  CHECK(c.engine.connect_timeout == defaults.connect_timeout);
  CHECK(c.engine.drift_factor == defaults.drift_factor);
  CHECK(c.engine.retry_delay == defaults.retry_delay);
  CHECK(c.engine.retry_jitter == defaults.retry_jitter);
  CHECK(c.engine.min_ttl == defaults.min_ttl);
  CHECK(c.engine.max_ttl == defaults.max_ttl);
  CHECK(c.engine.max_wait == defaults.max_wait);
  CHECK(c.engine.quarantine_restarted_nodes == defaults.quarantine_restarted_nodes);
  CHECK(c.engine.key_prefix == defaults.key_prefix);
}

TEST_CASE("fencelockd refuses to run without --redis", "[service]") {
  CHECK_THAT(refusal({}), Catch::StartsWith("--redis: required"));
  CHECK_THAT(refusal({"--threads", "2"}), Catch::StartsWith("--redis: required"));
}

TEST_CASE("a flag beats its environment variable, which beats the config file key", "[service]") {
  const auto [flag, key, file_value, variable, env_value, flag_value, from_file, from_env,
              from_flag] = GENERATE(table<std::string, std::string, std::string, std::string,
                                          std::string, std::string, std::string, std::string,
                                          std::string>({
      {"listen", "listen", R"("127.0.0.1:9001")", "FENCELOCK_LISTEN", "127.0.0.1:9002",
       "127.0.0.1:9003", "127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9003"},
      {"redis", "redis", R"(["127.0.0.1:7001", "127.0.0.1:7011"])", "FENCELOCK_REDIS",
       "127.0.0.1:7002", "127.0.0.1:7003,[::1]:7003", "127.0.0.1:7001,127.0.0.1:7011",
       "127.0.0.1:7002", "127.0.0.1:7003,[::1]:7003"},
      {"tokens", "tokens", R"("sqlite:/data/a.db")", "FENCELOCK_TOKENS", "redis://127.0.0.1:6400",
       "sqlite:c.db", "sqlite:/data/a.db", "redis://127.0.0.1:6400", "sqlite:c.db"},
      {"token-epoch-file", "token_epoch_file", R"("/a")", "FENCELOCK_TOKEN_EPOCH_FILE", "/b", "/c",
       "/a", "/b", "/c"},
      {"tokens-unsafe-persistence", "tokens_unsafe_persistence", "true",
       "FENCELOCK_TOKENS_UNSAFE_PERSISTENCE", "no", "yes", "on", "off", "on"},
      {"token-timeout", "token_timeout", R"("10ms")", "FENCELOCK_TOKEN_TIMEOUT", "20ms", "30ms",
       "10ms", "20ms", "30ms"},
      {"body-limit", "body_limit", "2048", "FENCELOCK_BODY_LIMIT", "4096", "8192", "2048", "4096",
       "8192"},
      {"threads", "threads", "2", "FENCELOCK_THREADS", "3", "4", "2", "3", "4"},
      {"max-connections", "max_connections", "10", "FENCELOCK_MAX_CONNECTIONS", "20", "30", "10",
       "20", "30"},
      {"idle-timeout", "idle_timeout", R"("2s")", "FENCELOCK_IDLE_TIMEOUT", "3s", "4s", "2s", "3s",
       "4s"},
      {"shutdown-grace", "shutdown_grace", R"("0ms")", "FENCELOCK_SHUTDOWN_GRACE", "1s", "2m",
       "0ms", "1s", "2m"},
      {"node-timeout", "node_timeout", R"("30ms")", "FENCELOCK_NODE_TIMEOUT", "40ms", "50ms",
       "30ms", "40ms", "50ms"},
      {"connect-timeout", "connect_timeout", R"("1s")", "FENCELOCK_CONNECT_TIMEOUT", "2s", "3s",
       "1s", "2s", "3s"},
      {"drift-factor", "drift_factor", "0.02", "FENCELOCK_DRIFT_FACTOR", "0.03", "0", "0.02",
       "0.03", "0"},
      {"retry-delay", "retry_delay", R"("1ms")", "FENCELOCK_RETRY_DELAY", "2ms", "3ms", "1ms",
       "2ms", "3ms"},
      {"retry-jitter", "retry_jitter", R"("0ms")", "FENCELOCK_RETRY_JITTER", "5ms", "6ms", "0ms",
       "5ms", "6ms"},
      {"min-ttl", "min_ttl", R"("1ms")", "FENCELOCK_MIN_TTL", "2ms", "3ms", "1ms", "2ms", "3ms"},
      {"max-ttl", "max_ttl", R"("2m")", "FENCELOCK_MAX_TTL", "3m", "4m", "2m", "3m", "4m"},
      {"max-wait", "max_wait", R"("0ms")", "FENCELOCK_MAX_WAIT", "1s", "2s", "0ms", "1s", "2s"},
      {"quarantine", "quarantine", "false", "FENCELOCK_QUARANTINE", "on", "off", "off", "on",
       "off"},
      {"new-lock-nodes", "new_lock_nodes", "true", "FENCELOCK_NEW_LOCK_NODES", "no", "yes", "on",
       "off", "on"},
      {"adopt-legacy-markers", "adopt_legacy_markers", "true", "FENCELOCK_ADOPT_LEGACY_MARKERS",
       "no", "yes", "on", "off", "on"},
      {"key-prefix", "key_prefix", R"("f:")", "FENCELOCK_KEY_PREFIX", "e:", "c:", "f:", "e:", "c:"},
      {"log-format", "log_format", R"("json")", "FENCELOCK_LOG_FORMAT", "text", "json", "json",
       "text", "json"},
      {"log-level", "log_level", R"("debug")", "FENCELOCK_LOG_LEVEL", "warning", "error", "debug",
       "warning", "error"},
  }));
  CAPTURE(flag);
  TempDir dir;
  const std::string file = write_file(dir, "config.json", "{\"" + key + "\": " + file_value + "}");
  Args args = {"--config", file};
  if (flag != "redis") args = with_redis(args);
  Variables variables;

  SECTION("the file alone") {
    CHECK(shown(accepted(args).config, flag) == from_file);
  }
  SECTION("the environment over the file") {
    variables[variable] = env_value;
    const ParsedConfig parsed = accepted(args, variables);
    CHECK(shown(parsed.config, flag) == from_env);
    CHECK(parsed.sources == std::vector<std::string>{"file " + file, "env " + variable});
  }
  SECTION("the flag over both") {
    variables[variable] = env_value;
    if (flag == "tokens-unsafe-persistence" || flag == "new-lock-nodes" ||
        flag == "adopt-legacy-markers") {
      args.push_back("--" + flag + "=" + flag_value);  // a switch takes no separate value
    } else {
      args.insert(args.end(), {"--" + flag, flag_value});
    }
    CHECK(shown(accepted(args, variables).config, flag) == from_flag);
  }
}

TEST_CASE("flags take their value as --flag=value as well as --flag value", "[service]") {
  const auto [args, flag, expected] = GENERATE(table<Args, std::string, std::string>({
      {{"--threads=3"}, "threads", "3"},
      {{"--threads", "3"}, "threads", "3"},
      {{"--node-timeout=75ms"}, "node-timeout", "75ms"},
      {{"--quarantine=off"}, "quarantine", "off"},
      {{"--key-prefix="}, "key-prefix", R"("")"},
      {{"--key-prefix=--dashes"}, "key-prefix", "--dashes"},
      {{"--key-prefix=a=b"}, "key-prefix", "a=b"},
      {{"--tokens-unsafe-persistence"}, "tokens-unsafe-persistence", "on"},
      {{"--tokens-unsafe-persistence=false"}, "tokens-unsafe-persistence", "off"},
  }));
  CAPTURE(args);
  CHECK(shown(accepted(with_redis(args)).config, flag) == expected);
}

TEST_CASE("a flag given twice keeps its last value", "[service]") {
  CHECK(accepted(with_redis({"--threads", "2", "--threads=5"})).config.threads == 5);
}

TEST_CASE("an environment variable set to the empty string counts as unset", "[service]") {
  CHECK(accepted(with_redis({}), {{"FENCELOCK_THREADS", ""}}).config.threads == 1);
  CHECK_THAT(refusal({}, {{"FENCELOCK_REDIS", ""}}), Catch::StartsWith("--redis: required"));
}

TEST_CASE("switches read 1/true/yes/on and 0/false/no/off in any case", "[service]") {
  const auto [word, expected] = GENERATE(table<std::string, bool>({
      {"1", true},
      {"true", true},
      {"yes", true},
      {"on", true},
      {"TRUE", true},
      {"On", true},
      {"0", false},
      {"false", false},
      {"no", false},
      {"off", false},
      {"OFF", false},
  }));
  CAPTURE(word);
  CHECK(accepted(with_redis({}), {{"FENCELOCK_TOKENS_UNSAFE_PERSISTENCE", word}})
            .config.tokens_unsafe_persistence == expected);
  CHECK(accepted(with_redis({"--quarantine", word})).config.engine.quarantine_restarted_nodes ==
        expected);
}

TEST_CASE("a malformed value is refused with a one-line message that starts with its flag",
          "[service]") {
  const auto [args, expected_start] = GENERATE(table<Args, std::string>({
      {{"--node-timeout", "5x"},
       "--node-timeout: expected a duration like 50ms, 2s or 1m, got '5x'"},
      {{"--connect-timeout", "10"}, "--connect-timeout: expected a duration"},
      {{"--retry-delay", "-1s"}, "--retry-delay: expected a duration"},
      {{"--retry-jitter=1.5s"}, "--retry-jitter: expected a duration"},
      {{"--max-wait", "2h"}, "--max-wait: expected a duration"},
      {{"--min-ttl", ""}, "--min-ttl: expected a duration"},
      {{"--max-ttl", "1 m"}, "--max-ttl: expected a duration"},
      {{"--token-timeout", "ms"}, "--token-timeout: expected a duration"},
      {{"--idle-timeout", "1h"}, "--idle-timeout: expected a duration"},
      {{"--shutdown-grace", "soon"}, "--shutdown-grace: expected a duration"},
      {{"--drift-factor", "abc"}, "--drift-factor: expected a decimal number like 0.01, got 'abc'"},
      {{"--drift-factor", "1e-2"}, "--drift-factor: expected a decimal number"},
      {{"--drift-factor", "-0.1"}, "--drift-factor: expected a decimal number"},
      {{"--drift-factor", ".5"}, "--drift-factor: expected a decimal number"},
      {{"--drift-factor", "nan"}, "--drift-factor: expected a decimal number"},
      {{"--threads", "two"}, "--threads: expected a whole number, got 'two'"},
      {{"--threads", "2.5"}, "--threads: expected a whole number"},
      {{"--threads", "-1"}, "--threads: expected a whole number"},
      {{"--threads", "+2"}, "--threads: expected a whole number"},
      {{"--body-limit", "64k"}, "--body-limit: expected a whole number"},
      {{"--max-connections", " 5"}, "--max-connections: expected a whole number"},
      {{"--listen", "localhost"}, "--listen: 'localhost': expected HOST:PORT"},
      {{"--listen", "example.com:80"}, "--listen: 'example.com:80': host must be a numeric IP"},
      {{"--listen", "127.0.0.1:0"}, "--listen: '127.0.0.1:0': port must be 1..65535"},
      {{"--listen", "::1:80"}, "--listen: '::1:80': write IPv6 addresses as [IPV6]:PORT"},
      {{"--redis", ""}, "--redis: needs at least one HOST:PORT"},
      {{"--redis", "127.0.0.1:7000,,127.0.0.1:7001"}, "--redis: empty entry in the node list"},
      {{"--redis", "127.0.0.1:7000,"}, "--redis: empty entry in the node list"},
      {{"--redis", "redis.example_:6379"}, "--redis: 'redis.example_:6379': host must be"},
      {{"--redis", "127.0.0.1"}, "--redis: '127.0.0.1': expected HOST:PORT"},
      {{"--quarantine", "maybe"}, "--quarantine: expected on or off"},
      {{"--log-format", "xml"}, "--log-format: expected text or json, got 'xml'"},
      {{"--log-level", "warn"}, "--log-level: expected debug, info, warning or error"},
      {{"--tokens-unsafe-persistence=maybe"}, "--tokens-unsafe-persistence: expected on or off"},
      {{"--token-epoch-file="}, "--token-epoch-file: expected a path of 1 to 4096 bytes"},
      {{"--token-epoch-file", std::string(4097, 'p')}, "--token-epoch-file: expected a path"},
      {{"--key-prefix"}, "--key-prefix: needs a value (--key-prefix VALUE or --key-prefix=VALUE)"},
      {{"--key-prefix", "--threads"}, "--key-prefix: needs a value"},
      {{"--nope"}, "--nope: unknown flag (see --help)"},
      {{"--nope=1"}, "--nope: unknown flag"},
      {{"-x"}, "-x: unknown flag"},
      {{"--"}, "unexpected argument '--'"},
      {{"run"}, "unexpected argument 'run': fencelockd takes only flags"},
      {{"--help=yes"}, "--help: takes no value"},
  }));
  CAPTURE(args);
  CHECK_THAT(refusal(with_redis(args)), Catch::StartsWith(expected_start));
}

TEST_CASE("a value outside its bounds is refused with the flag and the bounds", "[service]") {
  std::vector<std::string> too_many_nodes;
  for (int port = 7000; port < 7016; ++port)
    too_many_nodes.push_back("127.0.0.1:" + std::to_string(port));
  std::string sixteen_nodes;
  for (const std::string& node : too_many_nodes)
    sixteen_nodes += (sixteen_nodes.empty() ? "" : ",") + node;

  const auto [args, expected] = GENERATE_COPY(table<Args, std::string>({
      {{"--threads", "0"}, "--threads: must be between 1 and 64, got 0"},
      {{"--threads", "65"}, "--threads: must be between 1 and 64, got 65"},
      {{"--threads", "99999999999999999999999"},
       "--threads: must be between 1 and 64, got '99999999999999999999999'"},
      {{"--body-limit", "1023"}, "--body-limit: must be between 1024 and 16777216, got 1023"},
      {{"--body-limit", "16777217"},
       "--body-limit: must be between 1024 and 16777216, got 16777217"},
      {{"--max-connections", "0"}, "--max-connections: must be between 1 and 1000000, got 0"},
      {{"--max-connections", "1000001"},
       "--max-connections: must be between 1 and 1000000, got 1000001"},
      {{"--token-timeout", "0ms"}, "--token-timeout: must be between 1ms and 10s, got 0ms"},
      {{"--token-timeout", "10001ms"}, "--token-timeout: must be between 1ms and 10s, got 10001ms"},
      {{"--idle-timeout", "999ms"}, "--idle-timeout: must be between 1s and 60m, got 999ms"},
      {{"--idle-timeout", "61m"}, "--idle-timeout: must be between 1s and 60m, got 61m"},
      {{"--shutdown-grace", "301s"}, "--shutdown-grace: must be between 0ms and 5m, got 301s"},
      {{"--node-timeout", "0ms"}, "--node-timeout: must be between 1 ms and 10000 ms"},
      {{"--node-timeout", "11s"}, "--node-timeout: must be between 1 ms and 10000 ms"},
      {{"--connect-timeout", "61s"}, "--connect-timeout: must be between 1 ms and 60000 ms"},
      {{"--drift-factor", "0.51"}, "--drift-factor: must be between 0 and 0.5"},
      {{"--retry-delay", "61s"}, "--retry-delay: must be between 0 ms and 60000 ms"},
      {{"--retry-jitter", "61s"}, "--retry-jitter: must be between 0 ms and 60000 ms"},
      {{"--max-wait", "61m"}, "--max-wait: must be between 0 ms and 3600000 ms"},
      {{"--min-ttl", "0ms"}, "--min-ttl/--max-ttl: must satisfy 1 ms <= min_ttl <= max_ttl"},
      {{"--min-ttl", "2s", "--max-ttl", "1s"}, "--min-ttl/--max-ttl: must satisfy"},
      {{"--max-ttl", "1441m"}, "--min-ttl/--max-ttl: must satisfy"},
      {{"--key-prefix", std::string(65, 'k')}, "--key-prefix: must be at most 64 bytes"},
      {{"--redis", sixteen_nodes}, "--redis: need 1 to 15 Redis nodes, got 16"},
      {{"--redis", "127.0.0.1:7000,127.0.0.1:7000"}, "--redis: 127.0.0.1:7000 is listed twice"},
      {{"--redis", "redis1:7000,REDIS1.:7000"}, "--redis: redis1:7000 is listed twice"},
      {{"--redis", "redis_1:7000"}, "--redis: 'redis_1:7000': host must be an IP address or a DNS"},
      {{"--tokens", "redis://-x:1"}, "--tokens: 'redis://-x:1': host must be an IP address or a"},
  }));
  CAPTURE(args);
  Args full = args;
  if (std::find(args.begin(), args.end(), "--redis") == args.end()) full = with_redis(args);
  CHECK_THAT(refusal(full), Catch::StartsWith(expected));
}

TEST_CASE("values at their bounds are accepted", "[service]") {
  const Args args = GENERATE(values<Args>({
      {"--threads", "1"},
      {"--threads", "64"},
      {"--body-limit", "1024"},
      {"--body-limit", "16777216"},
      {"--max-connections", "1"},
      {"--max-connections", "1000000"},
      {"--token-timeout", "1ms"},
      {"--token-timeout", "10s"},
      {"--idle-timeout", "1s"},
      {"--idle-timeout", "60m"},
      {"--shutdown-grace", "0s"},
      {"--shutdown-grace", "5m"},
      {"--drift-factor", "0.5"},
      {"--drift-factor", "0"},
      {"--max-ttl", "1440m"},
      {"--max-wait", "0s"},
      {"--max-wait", "60m"},
      {"--key-prefix", std::string(64, 'k')},
  }));
  CAPTURE(args);
  CHECK(parse(with_redis(args)).ok());
}

TEST_CASE("an error in the environment or the file says where the value came from", "[service]") {
  SECTION("a malformed environment variable") {
    CHECK(refusal(with_redis({}), {{"FENCELOCK_THREADS", "100"}}) ==
          "--threads (from FENCELOCK_THREADS): must be between 1 and 64, got 100");
  }
  SECTION("an engine bound broken by the environment") {
    CHECK(refusal(with_redis({}), {{"FENCELOCK_NODE_TIMEOUT", "20s"}}) ==
          "--node-timeout (from FENCELOCK_NODE_TIMEOUT): must be between 1 ms and 10000 ms");
  }
  SECTION("an engine bound broken by the file") {
    TempDir dir;
    const std::string file = write_file(dir, "c.json", R"({"node_timeout": "20s"})");
    CHECK(refusal(with_redis({"--config", file})) ==
          "--node-timeout (from node_timeout in " + file + "): must be between 1 ms and 10000 ms");
  }
  SECTION("a flag that fixes the engine bound clears the origin") {
    CHECK(refusal(with_redis({"--node-timeout", "20s"}), {{"FENCELOCK_NODE_TIMEOUT", "30ms"}}) ==
          "--node-timeout: must be between 1 ms and 10000 ms");
    CHECK(parse(with_redis({"--node-timeout", "30ms"}), {{"FENCELOCK_NODE_TIMEOUT", "20s"}}).ok());
  }
}

TEST_CASE("the tokens flag takes sqlite:PATH, redis://HOST:PORT or etcd://HOST:PORT,...",
          "[service]") {
  SECTION("accepted") {
    const auto [text, backend, where] = GENERATE(table<std::string, TokenBackend, std::string>({
        {"sqlite:/var/lib/fencelock/tokens.db", TokenBackend::kSqlite,
         "/var/lib/fencelock/tokens.db"},
        {"sqlite:tokens.db", TokenBackend::kSqlite, "tokens.db"},
        {"sqlite:./a b.db", TokenBackend::kSqlite, "./a b.db"},
        {"redis://127.0.0.1:6400", TokenBackend::kRedis, "127.0.0.1:6400"},
        {"redis://localhost:6400", TokenBackend::kRedis, "localhost:6400"},
        {"redis://Redis-Tokens.internal:6400", TokenBackend::kRedis, "redis-tokens.internal:6400"},
        {"redis://[::1]:6400", TokenBackend::kRedis, "[::1]:6400"},
    }));
    CAPTURE(text);
    const ServiceConfig c = accepted(with_redis({"--tokens", text})).config;
    CHECK(c.token_backend == backend);
    if (backend == TokenBackend::kSqlite) {
      CHECK(c.sqlite_path == where);
    } else {
      CHECK(c.token_master.to_string() == where);
    }
  }
  SECTION("refused") {
    const auto [text, expected_start] = GENERATE(table<std::string, std::string>({
        {"sqlite:", "--tokens: expected sqlite:PATH with a path of 1 to 4096 bytes, got 'sqlite:'"},
        {"redis://", "--tokens: 'redis://': expected HOST:PORT"},
        {"redis://127.0.0.1", "--tokens: 'redis://127.0.0.1': expected HOST:PORT"},
        {"redis://tokens.127:6379", "--tokens: 'redis://tokens.127:6379': host must be"},
        {"redis://127.0.0.1:6400/0", "--tokens: 'redis://127.0.0.1:6400/0': port must be"},
        {"postgres://127.0.0.1:5432",
         "--tokens: expected sqlite:PATH, redis://HOST:PORT or "
         "etcd://HOST:PORT[,...][?prefix=P][&floor=N], got 'postgres://127.0.0.1:5432'"},
        {"/var/lib/tokens.db", "--tokens: expected sqlite:PATH, redis://HOST:PORT or etcd://"},
        {"SQLITE:/x.db", "--tokens: expected sqlite:PATH, redis://HOST:PORT or etcd://"},
        {"etcd://", "--tokens: '': expected HOST:PORT"},
        {"etcd://127.0.0.1:2379,", "--tokens: '': expected HOST:PORT"},
        {"etcd://etcd-.example:2379", "--tokens: 'etcd-.example:2379': host must be"},
        {"etcd://127.0.0.1:2379?bucket=x", "--tokens: the etcd options are prefix=P and floor=N"},
        {"etcd://127.0.0.1:2379?prefix=a&", "--tokens: the etcd options are prefix=P and floor=N"},
        {"etcd://127.0.0.1:2379?floor=", "--tokens: the etcd floor must be a whole number"},
        {"etcd://127.0.0.1:2379?floor=-1", "--tokens: the etcd floor must be a whole number"},
        {"etcd://127.0.0.1:2379?floor=12x", "--tokens: the etcd floor must be a whole number"},
        {"etcd://127.0.0.1:2379?floor=4611686018427387905",
         "--tokens: the etcd floor must be a whole number 0 .. 2^62"},
        {"etcd://127.0.0.1:2379?prefix=", "--tokens: the etcd prefix must be 1 to 128"},
        {"etcd://127.0.0.1:2379?prefix=a b", "--tokens: the etcd prefix must be 1 to 128"},
        {"sqlite:" + std::string(4097, 'p'), "--tokens: expected sqlite:PATH with a path"},
    }));
    CAPTURE(text);
    CHECK_THAT(refusal(with_redis({"--tokens", text})), Catch::StartsWith(expected_start));
  }
  SECTION("etcd members, with and without a prefix") {
    ServiceConfig c =
        accepted(with_redis({"--tokens", "etcd://127.0.0.1:2379,localhost:2479,[::1]:2579"}))
            .config;
    CHECK(c.token_backend == TokenBackend::kEtcd);
    REQUIRE(c.etcd_endpoints.size() == 3);
    CHECK(c.etcd_endpoints[1].to_string() == "localhost:2479");
    CHECK(c.etcd_prefix == "fencelock/token/");
    CHECK(c.etcd_floor == 0);
    c = accepted(with_redis({"--tokens", "etcd://127.0.0.1:2379?prefix=team-a/tokens/"})).config;
    CHECK(c.etcd_prefix == "team-a/tokens/");
    c = accepted(with_redis({"--tokens", "etcd://127.0.0.1:2379?floor=1099511627776&prefix=b/"}))
            .config;
    CHECK(c.etcd_prefix == "b/");
    CHECK(c.etcd_floor == 1099511627776);
  }
  SECTION("a later sqlite: setting replaces an earlier redis:// one") {
    const ServiceConfig c = accepted(with_redis({"--tokens", "sqlite:b.db"}),
                                     {{"FENCELOCK_TOKENS", "redis://127.0.0.1:6400"}})
                                .config;
    CHECK(c.token_backend == TokenBackend::kSqlite);
    CHECK(c.sqlite_path == "b.db");
    CHECK(c.token_master.host.empty());
  }
}

TEST_CASE("the TLS files come as a pair, and a client CA only with them", "[service]") {
  const ServiceConfig c =
      accepted(with_redis({"--tls-cert", "/etc/f/cert.pem", "--tls-key", "/etc/f/key.pem",
                           "--tls-client-ca", "/etc/f/ca.pem"}))
          .config;
  CHECK(c.tls_cert == "/etc/f/cert.pem");
  CHECK(c.tls_key == "/etc/f/key.pem");
  CHECK(c.tls_client_ca == "/etc/f/ca.pem");
  CHECK(accepted(with_redis({})).config.tls_cert.empty());
  CHECK(refusal(with_redis({"--tls-cert", "c.pem"})) ==
        "--tls-cert: needs --tls-key (both or neither)");
  CHECK(refusal(with_redis({}), {{"FENCELOCK_TLS_KEY", "k.pem"}}) ==
        "--tls-key (from FENCELOCK_TLS_KEY): needs --tls-cert (both or neither)");
  CHECK_THAT(refusal(with_redis({"--tls-client-ca", "ca.pem"})),
             Catch::StartsWith("--tls-client-ca: needs --tls-cert and --tls-key"));
  CHECK_THAT(refusal(with_redis({"--tls-cert", ""})),
             Catch::StartsWith("--tls-cert: expected a path of 1 to 4096 bytes"));
}

TEST_CASE("help and version win over every other flag, good or bad", "[service]") {
  const auto [args, command] = GENERATE(table<Args, Command>({
      {{"--help"}, Command::kHelp},
      {{"-h"}, Command::kHelp},
      {{"--version"}, Command::kVersion},
      {{"--nope", "--help"}, Command::kHelp},
      {{"--threads", "0", "--version"}, Command::kVersion},
      {{"--redis", "--help"}, Command::kHelp},
      {{"--help", "--version"}, Command::kHelp},
      {{"--version", "-h"}, Command::kVersion},
  }));
  CAPTURE(args);
  // Neither the environment nor the file is read: a broken one does not matter.
  const ParsedConfig parsed = accepted(
      args, {{"FENCELOCK_CONFIG", "/nonexistent/fencelock.json"}, {"FENCELOCK_THREADS", "x"}});
  CHECK(parsed.command == command);
  CHECK(parsed.sources.empty());
}

TEST_CASE("the config file holds a JSON object of settings keyed by flag name", "[service]") {
  TempDir dir;
  SECTION("the example from the docs") {
    const std::string file = write_file(dir, "fencelock.json", R"({
      "listen": "127.0.0.1:9000",
      "redis": ["127.0.0.1:7000", "127.0.0.1:7001"],
      "node_timeout": "50ms",
      "threads": 2,
      "quarantine": "off",
      "tokens_unsafe_persistence": true,
      "drift_factor": 0.02
    })");
    const ParsedConfig parsed = accepted({"--config", file});
    CHECK(parsed.sources == std::vector<std::string>{"file " + file});
    const ServiceConfig& c = parsed.config;
    CHECK(c.listen.to_string() == "127.0.0.1:9000");
    REQUIRE(c.engine.nodes.size() == 2);
    CHECK(c.engine.nodes[1].to_string() == "127.0.0.1:7001");
    CHECK(c.engine.node_timeout == 50ms);
    CHECK(c.threads == 2);
    CHECK_FALSE(c.engine.quarantine_restarted_nodes);
    CHECK(c.tokens_unsafe_persistence);
    CHECK(c.engine.drift_factor == 0.02);
  }
  SECTION("redis as one comma-separated string, quarantine as a boolean") {
    const std::string file = write_file(
        dir, "c.json", R"({"redis": "127.0.0.1:7000, 127.0.0.1:7001", "quarantine": false})");
    const ServiceConfig c = accepted({"--config=" + file}).config;
    CHECK(c.engine.nodes.size() == 2);
    CHECK_FALSE(c.engine.quarantine_restarted_nodes);
  }
  SECTION("FENCELOCK_CONFIG names the file when --config does not") {
    const std::string from_env = write_file(dir, "env.json", R"({"threads": 3})");
    const std::string from_flag = write_file(dir, "flag.json", R"({"threads": 4})");
    CHECK(accepted(with_redis({}), {{"FENCELOCK_CONFIG", from_env}}).config.threads == 3);
    CHECK(accepted(with_redis({"--config", from_flag}), {{"FENCELOCK_CONFIG", from_env}})
              .config.threads == 4);
  }
  SECTION("a file of exactly 1 MiB is read") {
    const std::string file = write_file(dir, "big.json", "{}" + std::string(1024 * 1024 - 2, ' '));
    CHECK(parse(with_redis({"--config", file})).ok());
  }
}

TEST_CASE("a config file that cannot be used is refused naming --config", "[service]") {
  TempDir dir;
  const std::string missing = (dir.path() / "missing.json").string();
  SECTION("a missing file") {
    CHECK(refusal(with_redis({"--config", missing})) ==
          "--config: cannot read '" + missing + "': No such file or directory");
  }
  SECTION("a missing file named by FENCELOCK_CONFIG") {
    CHECK_THAT(refusal(with_redis({}), {{"FENCELOCK_CONFIG", missing}}),
               Catch::StartsWith("--config (from FENCELOCK_CONFIG): cannot read"));
  }
  SECTION("an empty path") {
    CHECK(refusal(with_redis({"--config="})) == "--config: needs a file path");
  }
  SECTION("a directory") {
    CHECK(refusal(with_redis({"--config", dir.path().string()})) ==
          "--config: cannot read '" + dir.path().string() + "': not a regular file");
  }
  SECTION("a file over 1 MiB") {
    const std::string file = write_file(dir, "big.json", "{}" + std::string(1024 * 1024 - 1, ' '));
    CHECK(refusal(with_redis({"--config", file})) ==
          "--config: '" + file + "' is larger than 1 MiB");
  }
  SECTION("a file that is not JSON or not an object") {
    const auto [text, expected_end] = GENERATE(table<std::string, std::string>({
        {"", "' is not valid JSON"},
        {"threads = 2", "' is not valid JSON"},
        {R"({"threads": 2,})", "' is not valid JSON"},
        {R"({"threads": 2} // comment)", "' is not valid JSON"},
        {R"(["threads", 2])", "' must hold a JSON object, got a JSON array"},
        {"42", "' must hold a JSON object, got a JSON number"},
        {"null", "' must hold a JSON object, got a JSON null"},
    }));
    CAPTURE(text);
    const std::string file = write_file(dir, "c.json", text);
    CHECK(refusal(with_redis({"--config", file})) == "--config: '" + file + expected_end);
  }
  SECTION("an unknown key") {
    const auto [text, expected_end] = GENERATE(table<std::string, std::string>({
        {R"({"nope": 1})", "': unknown key 'nope'"},
        {R"({"node-timeout": "50ms"})", "': unknown key 'node-timeout' (write node_timeout)"},
        {R"({"config": "other.json"})", "': unknown key 'config'"},
        {R"({"help": true})", "': unknown key 'help'"},
        {R"({"Threads": 2})", "': unknown key 'Threads'"},
    }));
    CAPTURE(text);
    const std::string file = write_file(dir, "c.json", text);
    CHECK(refusal(with_redis({"--config", file})) == "--config: '" + file + expected_end);
  }
}

TEST_CASE("a config file value of the wrong JSON type is refused naming its flag", "[service]") {
  const auto [text, expected_start, expected_problem] =
      GENERATE(table<std::string, std::string, std::string>({
          {R"({"threads": "2"})", "--threads (from threads in ",
           "expected a whole number, got a JSON string"},
          {R"({"threads": 2.5})", "--threads (from threads in ",
           "expected a whole number, got a JSON number"},
          {R"({"threads": -1})", "--threads (from threads in ", "must be between 1 and 64, got -1"},
          {R"({"node_timeout": 50})", "--node-timeout (from node_timeout in ",
           "expected a string like \"50ms\", got a JSON number"},
          {R"({"listen": null})", "--listen (from listen in ",
           "expected a string \"HOST:PORT\", got a JSON null"},
          {R"({"redis": [7000]})", "--redis (from redis in ",
           "expected \"HOST:PORT\" strings in the array, got a JSON number"},
          {R"({"redis": []})", "--redis (from redis in ", "needs at least one HOST:PORT"},
          {R"({"redis": {"a": 1}})", "--redis (from redis in ",
           "expected a string \"HOST:PORT,...\" or an array of them, got a JSON object"},
          {R"({"quarantine": "maybe"})", "--quarantine (from quarantine in ",
           "expected on or off (or 1/true/yes, 0/false/no), got 'maybe'"},
          {R"({"tokens_unsafe_persistence": 1})",
           "--tokens-unsafe-persistence (from tokens_unsafe_persistence in ",
           "expected true, false, \"on\" or \"off\", got a JSON number"},
          {R"({"drift_factor": "0.1"})", "--drift-factor (from drift_factor in ",
           "expected a number, got a JSON string"},
          {R"({"tokens": ["sqlite:a.db"]})", "--tokens (from tokens in ",
           "expected a string \"sqlite:PATH\" or \"redis://HOST:PORT\", got a JSON array"},
          {R"({"key_prefix": "a\u0000b"})", "--key-prefix (from key_prefix in ",
           "must not contain a NUL byte"},
      }));
  CAPTURE(text);
  TempDir dir;
  const std::string file = write_file(dir, "c.json", text);
  const std::string message = refusal(with_redis({"--config", file}));
  CHECK_THAT(message, Catch::StartsWith(expected_start + file + "): "));
  CHECK_THAT(message, Catch::EndsWith(expected_problem));
}

TEST_CASE("an error message stays on one short line whatever the value holds", "[service]") {
  CHECK(refusal(with_redis({"--node-timeout", "5\nx"})) ==
        "--node-timeout: expected a duration like 50ms, 2s or 1m, got '5\\x0ax'");
  const std::string huge = refusal(with_redis({"--node-timeout", std::string(100'000, '9') + "x"}));
  CHECK(huge.size() < 200);
  CHECK_THAT(huge, Catch::EndsWith("...'"));
}

TEST_CASE("every setting has a flag, an environment variable and a line in --help", "[service]") {
  const std::vector<std::string> flags = {"listen",
                                          "redis",
                                          "tokens",
                                          "token-epoch-file",
                                          "tokens-unsafe-persistence",
                                          "token-timeout",
                                          "redis-user",
                                          "redis-password-file",
                                          "token-user",
                                          "token-password-file",
                                          "auth-file",
                                          "tls-cert",
                                          "tls-key",
                                          "tls-client-ca",
                                          "body-limit",
                                          "threads",
                                          "max-connections",
                                          "max-connections-per-client",
                                          "idle-timeout",
                                          "request-timeout",
                                          "body-memory",
                                          "allowed-hosts",
                                          "allowed-origins",
                                          "shutdown-grace",
                                          "node-timeout",
                                          "connect-timeout",
                                          "drift-factor",
                                          "retry-delay",
                                          "retry-jitter",
                                          "min-ttl",
                                          "max-ttl",
                                          "max-wait",
                                          "quarantine",
                                          "new-lock-nodes",
                                          "adopt-legacy-markers",
                                          "key-prefix",
                                          "log-format",
                                          "log-level"};
  const std::string line = describe(accepted(with_redis({})).config);
  std::string expected_keys;
  for (const std::string& flag : flags) expected_keys += flag + "=";
  std::string keys;
  for (std::size_t start = 0; start < line.size();) {
    const std::size_t equals = line.find('=', start);
    keys += line.substr(start, equals + 1 - start);
    start = std::min(line.find(' ', equals), line.size()) + 1;
  }
  CHECK(keys == expected_keys);

  const std::string usage = usage_text();
  for (const std::string& flag :
       {std::string("help"), std::string("version"), std::string("config")}) {
    CHECK_THAT(usage, Catch::Contains("--" + flag));
  }
  for (const std::string& flag : flags) {
    std::string variable = "FENCELOCK_" + flag;
    for (char& ch : variable) ch = ch == '-' ? '_' : static_cast<char>(std::toupper(ch));
    CHECK_THAT(usage, Catch::Contains("\n  --" + flag + " "));
    CHECK_THAT(usage, Catch::Contains("[" + variable + ", default "));
  }
  CHECK_THAT(usage,
             Catch::Contains("--node-timeout DURATION  [FENCELOCK_NODE_TIMEOUT, default 50ms]"));
  CHECK_THAT(usage, Catch::Contains("--redis HOST:PORT[,...]  [FENCELOCK_REDIS, default none]"));
  CHECK(usage.back() == '\n');
}

TEST_CASE("describe() prints the effective configuration on one line", "[service]") {
  const ServiceConfig c =
      accepted({"--redis", "127.0.0.1:7000,[::1]:7001", "--tokens", "redis://127.0.0.1:6400",
                "--key-prefix", "my locks:", "--threads", "4"})
          .config;
  const std::string line = describe(c);
  CHECK(line.find('\n') == std::string::npos);
  CHECK_THAT(line, Catch::StartsWith("listen=127.0.0.1:8080 redis=127.0.0.1:7000,[::1]:7001 "
                                     "tokens=redis://127.0.0.1:6400 "));
  CHECK_THAT(line, Catch::Contains(" threads=4 "));
  CHECK_THAT(line, Catch::Contains(" drift-factor=0.01 "));
  CHECK_THAT(line, Catch::Contains(" key-prefix=\"my locks:\" "));
  CHECK_THAT(line, Catch::EndsWith(" log-format=text log-level=info"));
}

TEST_CASE("the browser allow-lists take comma-separated names, or an array in the file",
          "[service]") {
  const ParsedConfig parsed = accepted(with_redis({"--allowed-hosts", "lock.example, .corp.example",
                                                   "--allowed-origins", "https://a.example"}));
  CHECK(parsed.config.allowed_hosts == std::vector<std::string>{"lock.example", ".corp.example"});
  CHECK(parsed.config.allowed_origins == std::vector<std::string>{"https://a.example"});
  CHECK(accepted(with_redis({})).config.allowed_hosts.empty());
  CHECK_THAT(refusal(with_redis({"--allowed-hosts", "a.example,,b.example"})),
             Catch::StartsWith("--allowed-hosts"));
  std::string many;
  for (int i = 0; i < 65; ++i) many += (many.empty() ? "" : ",") + std::to_string(i) + ".example";
  CHECK_THAT(refusal(with_redis({"--allowed-hosts", many})), Catch::Contains("at most 64"));
  TempDir dir;
  const std::string file =
      write_file(dir, "c.json", R"({"allowed_origins": ["https://a.example", "http://b:8080"]})");
  CHECK(accepted(with_redis({"--config", file})).config.allowed_origins ==
        std::vector<std::string>{"https://a.example", "http://b:8080"});
}
