// Command-line parsing of the `fencelock` CLI: pure, so it is unit-tested without a service.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fencelock/lease.h"
#include "fencelock/result.h"

namespace fencelock::cli {

// Exit codes, documented in --help and docs/cli.md.
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;        // unexpected answer, internal error
inline constexpr int kExitUsage = 2;        // bad command line
inline constexpr int kExitLocked = 3;       // held by someone else and the wait ran out
inline constexpr int kExitNotHeld = 4;      // extend, release: the lease is gone; run: it was lost
inline constexpr int kExitUnavailable = 5;  // the service or its lock nodes cannot answer now
inline constexpr int kExitDenied = 6;       // no API key, an unknown one, or one not allowed this
inline constexpr int kExitTls = 7;          // TLS failed: certificate not trusted, or refused
inline constexpr int kExitPermitsMismatch = 8;  // --permits N: the semaphore is live with another N
inline constexpr int kExitCannotRun = 127;      // run: CMD could not be started

enum class Command {
  kHelp,
  kVersion,
  kRun,
  kAcquire,
  kExtend,
  kRelease,
  kStatus,
  kToken,
  kSemaphore,
  kRevoke,
  kList,
  kWatch,
};

// What `list` lists: the locks held, or --semaphores with a permit held, or --rwlocks with a grant
// held.
enum class ListKind { kLocks, kSemaphores, kRwLocks };

struct CliArgs {
  Command command = Command::kHelp;
  // --endpoint, FENCELOCK_ENDPOINT: one URL or several separated by commas (tried in order).
  std::string endpoint = "http://127.0.0.1:8080";
  std::string api_key;  // --api-key, else FENCELOCK_API_KEY: never printed
  std::string cacert;   // --cacert PATH, else FENCELOCK_CACERT: CAs for an https:// endpoint
  std::string cert;     // --cert PATH, else FENCELOCK_CERT: client certificate (mutual TLS)
  std::string key;      // --key PATH, else FENCELOCK_KEY: its private key
  std::chrono::milliseconds timeout{5000};  // --timeout: one request's round trip
  // run, acquire, extend, release: the positional NAME and every --name, in the order given;
  // two or more make a lock set. Other commands: the positional NAME. Never empty once parsed.
  std::vector<std::string> names;
  // names[0]; for a lock set, every name joined by ',' (a label for messages); list: the PREFIX.
  std::string name;
  std::optional<std::uint32_t> permits;     // --permits N (1..64): NAME is a counting semaphore
  std::optional<LeaseKind> rw;              // --read / --write: NAME is a read/write lock
  ListKind list_kind = ListKind::kLocks;    // list --semaphores / --rwlocks
  std::optional<std::size_t> list_limit;    // list --limit N (1..10,000,000): print at most N
  std::chrono::milliseconds ttl{30'000};    // --ttl
  std::chrono::milliseconds wait{0};        // --wait (run: default 0 too); any length
  bool wait_forever = false;                // --wait forever
  bool wait_given = false;                  // --wait appeared (watch: else 30 s)
  std::chrono::milliseconds grace{10'000};  // run --grace: SIGTERM → SIGKILL
  std::string owner;                        // --owner
  std::string request_id;   // --request-id (a single lock's acquire); "" = one made per call
  std::string lease;        // extend/release: argument or FENCELOCK_LEASE
  bool next_token = false;  // token --next
  std::optional<std::uint64_t> watched_token;  // watch --token T
  bool verbose = false;                        // -v, --verbose: what it does, on stderr
  bool skip_if_locked = false;  // run --skip-if-locked: held by someone else → exit 0, silent
  std::vector<std::string> command_line;  // run: CMD [ARGS...] after --; empty: hold the lock
};

// `args` excludes argv[0]. `env` looks up FENCELOCK_ENDPOINT and FENCELOCK_LEASE.
// Lock sets and permits are checked here, before any request: more than 16 names, a name given
// twice or not a valid lock name, --permits outside 1..64 or with several names, --name or
// --permits on a command that takes neither, --semaphores or --rwlocks but for list.
// Errors: kInvalidArgument with a one-line message (exit kExitUsage).
Result<CliArgs> parse_cli(const std::vector<std::string>& args,
                          const std::optional<std::string>& endpoint_env,
                          const std::optional<std::string>& lease_env);

// Fills what the command line left empty from the environment seen through `env`:
// FENCELOCK_API_KEY, FENCELOCK_CACERT, FENCELOCK_CERT, FENCELOCK_KEY (empty values count as unset).
void fill_from_environment(CliArgs& args,
                           const std::function<std::optional<std::string>(const char*)>& env);

// Refuses TLS files (--cacert, --cert, --key or their environment variables) with an http://
// endpoint, which would send the API key and the leases unencrypted although certificate checking
// was asked for. Errors: kInvalidArgument with a one-line message (exit kExitUsage).
Status check_tls_files(const CliArgs& args);

// What the command line asks to hold: a lock, a lock set (two or more names) or a permit.
LeaseKind lease_kind_of(const CliArgs& args) noexcept;

std::string cli_usage();

// A duration as the CLI takes it: one or more whole numbers with a unit, largest unit first,
// each unit at most once — h, m, s, ms: "500ms", "30s", "2m", "1h30m", "1m30s". At most 100
// days. nullopt for anything else.
std::optional<std::chrono::milliseconds> parse_cli_duration(std::string_view text) noexcept;

// The endpoint URLs of `args.endpoint` ("a,b,c" → {"a","b","c"}; empty parts are dropped).
std::vector<std::string> endpoints_of(const CliArgs& args);

// The exit code for an SDK error (kLocked → 3, kNotHeld → 4, unavailable/transport → 5, kTls → 7,
// kPermitsMismatch → 8, ...).
int exit_code_for(const Error& error) noexcept;

}  // namespace fencelock::cli
