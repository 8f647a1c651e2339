// fencelockd's configuration: command-line flags, FENCELOCK_* environment variables and an
// optional JSON file, merged into one ServiceConfig and validated once, before anything starts.
//
// Precedence, highest first: flags, environment, config file, the defaults below. Every flag
// `--some-flag` is also the environment variable FENCELOCK_SOME_FLAG and the config-file key
// "some_flag"; `--config FILE` (or FENCELOCK_CONFIG) names the file. usage_text() lists them all.
//
// Errors are one line, start with the flag they are about and say which source the value came
// from when it was not the command line, e.g.
//   --node-timeout: expected a duration like 50ms, 2s or 1m, got '5x'
//   --threads (from FENCELOCK_THREADS): must be between 1 and 64, got 100
// fencelockd prints the message and exits with status 2.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/service_result.h"
#include "fencelock/storage/engine_options.h"
#include "ops/log.h"

namespace fencelock::service {

// Where fencing tokens come from.
enum class TokenBackend {
  kSqlite,  // a local SQLite file: one fencelockd instance per file
  kRedis,   // INCR on one dedicated Redis master: several fencelockd instances may share it
  kEtcd,    // revisions of an etcd cluster: several instances, no single point of failure
};

struct ServiceConfig {
  // --listen HOST:PORT. Default 127.0.0.1:8080; numeric IP or localhost (not a DNS name), port
  // 1..65535.
  storage::NodeAddress listen{"127.0.0.1", 8080};

  // --redis HOST:PORT[,HOST:PORT...] fills engine.nodes (required, 1..15 nodes); the other engine
  // flags fill the other fields. Defaults and bounds are EngineOptions'. engine.min_ttl,
  // engine.max_ttl and engine.max_wait are also the bounds the HTTP API accepts.
  storage::EngineOptions engine;

  // --redis-user NAME and --redis-password-file PATH (or the environment variable
  // FENCELOCK_REDIS_PASSWORD, read by the service, never a flag value): AUTH on every lock node
  // connection. Empty: no AUTH. The --token-* pair does the same for the redis token master.
  std::string redis_user;
  std::filesystem::path redis_password_file;
  std::string token_user;
  std::filesystem::path token_password_file;

  // --tokens sqlite:PATH | redis://HOST:PORT | etcd://HOST:PORT[,...][?prefix=P]. Default
  // sqlite:./fencelock-tokens.db.
  TokenBackend token_backend = TokenBackend::kSqlite;
  // The SQLite token file when token_backend is kSqlite. 1..4096 bytes.
  std::filesystem::path sqlite_path = "./fencelock-tokens.db";
  // The token master when token_backend is kRedis; otherwise empty.
  storage::NodeAddress token_master;
  // The etcd members when token_backend is kEtcd (1..15), and the prefix of their token keys
  // (1..128 bytes of [A-Za-z0-9._:/-], default "fencelock/token/").
  std::vector<storage::NodeAddress> etcd_endpoints;
  std::string etcd_prefix = "fencelock/token/";
  std::uint64_t etcd_floor = 0;  // tokens above it when the prefix is first used
  // --token-epoch-file PATH, used with redis tokens only. Default ./fencelock-token-epoch;
  // 1..4096 bytes.
  std::filesystem::path token_epoch_file = "./fencelock-token-epoch";
  // --tokens-unsafe-persistence: start even if the token master may lose acknowledged writes.
  // Default false.
  bool tokens_unsafe_persistence = false;
  // --token-timeout: deadline of one token draw (Redis) or of one etcd request. Default 100 ms;
  // 1 ms .. 10 s.
  std::chrono::milliseconds token_timeout{100};

  // --auth-file PATH: API keys (auth/api_keys.h, docs/operations.md); reloaded on SIGHUP. Empty
  // (the default): no keys, anyone who can connect may do anything. 1..4096 bytes.
  std::filesystem::path auth_file;

  // --tls-cert PATH and --tls-key PATH (PEM; both or neither): serve HTTPS only, TLS 1.2+
  // (tls_context.h). --tls-client-ca PATH (needs the other two): require a client certificate
  // signed by one of its CAs (mTLS). All three are read again on SIGHUP. Empty (the default):
  // plain HTTP. 1..4096 bytes each.
  std::filesystem::path tls_cert;
  std::filesystem::path tls_key;
  std::filesystem::path tls_client_ca;

  // --body-limit: largest request body in bytes. Default 64 KiB; 1 KiB .. 16 MiB.
  std::size_t body_limit = std::size_t{64} * 1024;
  // --threads: network threads. Default 1; 1..64.
  unsigned threads = 1;
  // --max-connections: open client connections at once. Default 10,000; 1 .. 1,000,000.
  std::size_t max_connections = 10'000;
  // --max-connections-per-client: open connections from one source address. Default 1,000;
  // 1 .. 1,000,000.
  std::size_t max_connections_per_client = 1000;
  // --idle-timeout: how long a keep-alive connection may sit idle. Default 60 s; 1 s .. 1 h.
  std::chrono::milliseconds idle_timeout{60'000};
  // --request-timeout: a request must arrive whole within this of its first byte. Default 10 s;
  // 100 ms .. 10 min.
  std::chrono::milliseconds request_timeout{10'000};
  // --body-memory: bytes of request bodies being read or handled at once, over all connections.
  // Default 64 MiB; 1 MiB .. 16 GiB.
  std::size_t body_memory = std::size_t{64} * 1024 * 1024;
  // --allowed-hosts NAME,...: Host header names accepted besides IP addresses, localhost and the
  // machine's names (browser_guard.h). Checked always without API keys, and with them only when
  // set. Default empty; at most 64 entries.
  std::vector<std::string> allowed_hosts;
  // --allowed-origins ORIGIN,...: web origins whose cross-site requests are served. Default empty
  // (every Origin is refused); at most 64 entries.
  std::vector<std::string> allowed_origins;
  // --shutdown-grace: how long requests in flight may finish after SIGTERM. Default 10 s; 0 .. 5 m.
  std::chrono::milliseconds shutdown_grace{10'000};
  // --log-format: text (key=value, the default) or json (one object a line). log.h.
  LogFormat log_format = LogFormat::kText;
  // --log-level: lowest level written: debug, info (the default), warning or error.
  LogLevel log_level = LogLevel::kInfo;
};

enum class Command {
  kRun,      // start the service with ParsedConfig::config
  kHelp,     // --help or -h: print usage_text() and exit 0
  kVersion,  // --version: print the version and exit 0
};

struct ParsedConfig {
  Command command = Command::kRun;
  // Meaningful for kRun only; the defaults for kHelp and kVersion.
  ServiceConfig config;
  // The sources besides the command line that set something, for the startup log, in the order
  // they were applied: "file /etc/fencelock.json", then "env FENCELOCK_REDIS", ...
  std::vector<std::string> sources;
};

// Looks up one environment variable: its value, or nullopt when it is not set.
using Environment = std::function<std::optional<std::string>(std::string_view name)>;

// Parses `args` (argv[1..]), the environment seen through `env` and the config file they name,
// and validates the result (including validate_engine_options()).
//
// --help/-h and --version win over everything: if either appears as a flag, its Command is
// returned even when other flags are bad, and neither the environment nor the file is read
// (the first of the two wins). Otherwise the first error found is returned.
//
// Flags: `--flag VALUE` or `--flag=VALUE`; a VALUE that starts with "--" must use the second
// form. A flag given twice keeps its last value. --tokens-unsafe-persistence is a switch: alone it
// means true; `=VALUE` and every other source accept 1/true/yes/on or 0/false/no/off. An
// environment variable set to the empty string counts as unset.
//
// A malformed or out-of-range value is an error wherever it comes from, even if a higher source
// overrides it. The engine's bounds (validate_engine_options) apply to the merged result only, as
// some of them relate two settings (min_ttl <= max_ttl).
//
// Config file: at most 1 MiB holding one JSON object. Durations, addresses and paths are strings;
// counts are JSON integers; drift_factor is a number; the two booleans are booleans or the words
// above; "redis" is a comma-separated string or an array of strings.
//
// Errors: a ServiceError with a one-line message that starts with the flag concerned (the
// --redis flag when no Redis node is configured; --tls-cert or --tls-key when only one of them is
// set; --tls-client-ca without them; --config for a file that cannot be read, is
// larger than 1 MiB, is not a JSON object or has an unknown key). Thread safety: as safe as
// `env`; parse_config itself shares no state.
ServiceResult<ParsedConfig> parse_config(const std::vector<std::string>& args,
                                         const Environment& env);

// The --help text: every flag with its environment variable, default and bounds. Ends with '\n'.
std::string usage_text();

// One line (no '\n') describing the effective configuration for the startup log, e.g.
// "listen=127.0.0.1:8080 redis=127.0.0.1:7000,127.0.0.1:7001 tokens=sqlite:... threads=1 ...".
// Holds no secrets (there are none today).
std::string describe(const ServiceConfig& config);

}  // namespace fencelock::service
