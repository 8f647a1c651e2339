#include "cli_args.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <utility>

#include "fencelock/names.h"

namespace fencelock::cli {

namespace {

// The service's bounds (docs/api.md), refused here before any request.
constexpr std::size_t kMaxSetNames = 16;
constexpr std::uint32_t kMaxPermits = 64;

Error usage_error(std::string message) {
  return Error{ErrorCode::kInvalidArgument, std::move(message), 0, std::nullopt};
}

std::optional<std::uint32_t> permit_count(std::string_view text) {
  std::uint32_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 1 ||
      value > kMaxPermits)
    return std::nullopt;
  return value;
}

// The names of a lock set or a permit, checked as the service would check them.
Status check_names(const CliArgs& args) {
  if (args.names.size() > kMaxSetNames)
    return usage_error("a lock set has at most 16 names, got " + std::to_string(args.names.size()));
  for (const auto& name : args.names) {
    if (!is_valid_lock_name(name))
      return usage_error("'" + name + "': " + std::string(kLockNameRule));
  }
  std::vector<std::string> sorted = args.names;
  std::sort(sorted.begin(), sorted.end());
  if (const auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end())
    return usage_error("'" + *twice + "' is named twice");
  if (args.permits && args.names.size() > 1)
    return usage_error("--permits takes one semaphore NAME, not a lock set");
  if (args.rw && args.names.size() > 1)
    return usage_error("--read and --write take one read/write lock NAME, not a lock set");
  return Done{};
}

// What parse_cli has read so far.
struct ParseState {
  CliArgs out;
  std::vector<std::string> positional;
  std::vector<std::string> extra_names;  // --name
  bool seen_command = false;
  bool read = false;        // --read
  bool write = false;       // --write
  bool semaphores = false;  // --semaphores
  bool rwlocks = false;     // --rwlocks
};

// A flag without a value.
struct Switch {
  std::string_view flag;
  void (*set)(ParseState&);
};
constexpr Switch kSwitches[] = {
    {"--next", [](ParseState& p) { p.out.next_token = true; }},
    {"-v", [](ParseState& p) { p.out.verbose = true; }},
    {"--verbose", [](ParseState& p) { p.out.verbose = true; }},
    {"--skip-if-locked", [](ParseState& p) { p.out.skip_if_locked = true; }},
    {"--read", [](ParseState& p) { p.read = true; }},
    {"--write", [](ParseState& p) { p.write = true; }},
    {"--semaphores", [](ParseState& p) { p.semaphores = true; }},
    {"--rwlocks", [](ParseState& p) { p.rwlocks = true; }},
};

const Switch* find_switch(std::string_view arg) {
  for (const Switch& sw : kSwitches) {
    if (sw.flag == arg) return &sw;
  }
  return nullptr;
}

template <std::string CliArgs::*Field>
Status set_text(ParseState& p, const std::string&, const std::string& value) {
  p.out.*Field = value;
  return Done{};
}

template <std::chrono::milliseconds CliArgs::*Field>
Status set_duration(ParseState& p, const std::string& flag, const std::string& value) {
  const auto parsed = parse_cli_duration(value);
  if (!parsed) {
    return usage_error(flag + ": expected a duration like 500ms, 30s, 2m or 1h30m, got '" + value +
                       "'");
  }
  p.out.*Field = *parsed;
  return Done{};
}

Status set_wait(ParseState& p, const std::string& flag, const std::string& value) {
  p.out.wait_given = true;
  p.out.wait_forever = value == "forever";
  return p.out.wait_forever ? Status{Done{}} : set_duration<&CliArgs::wait>(p, flag, value);
}

Status set_permits(ParseState& p, const std::string&, const std::string& value) {
  p.out.permits = permit_count(value);
  if (p.out.permits) return Done{};
  return usage_error("--permits: expected a whole number from 1 to 64, got '" + value + "'");
}

constexpr std::size_t kMaxListLimit = 10'000'000;

Status set_list_limit(ParseState& p, const std::string&, const std::string& value) {
  std::size_t limit = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), limit);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size() || limit < 1 ||
      limit > kMaxListLimit)
    return usage_error("--limit: expected a whole number from 1 to 10000000, got '" + value + "'");
  p.out.list_limit = limit;
  return Done{};
}

Status set_watched_token(ParseState& p, const std::string&, const std::string& value) {
  std::uint64_t token = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), token);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size())
    return usage_error("--token: expected a fencing token (a whole number), got '" + value + "'");
  p.out.watched_token = token;
  return Done{};
}

Status add_name(ParseState& p, const std::string&, const std::string& value) {
  p.extra_names.push_back(value);
  return Done{};
}

// A flag with a value: "--flag VALUE" or "--flag=VALUE".
struct ValuedFlag {
  std::string_view flag;
  Status (*set)(ParseState&, const std::string& flag, const std::string& value);
};
constexpr ValuedFlag kValuedFlags[] = {
    {"--endpoint", set_text<&CliArgs::endpoint>},
    {"--api-key", set_text<&CliArgs::api_key>},
    {"--cacert", set_text<&CliArgs::cacert>},
    {"--cert", set_text<&CliArgs::cert>},
    {"--key", set_text<&CliArgs::key>},
    {"--owner", set_text<&CliArgs::owner>},
    {"--request-id", set_text<&CliArgs::request_id>},
    {"--name", add_name},
    {"--permits", set_permits},
    {"--token", set_watched_token},
    {"--limit", set_list_limit},
    {"--wait", set_wait},
    {"--timeout", set_duration<&CliArgs::timeout>},
    {"--ttl", set_duration<&CliArgs::ttl>},
    {"--grace", set_duration<&CliArgs::grace>},
};

// args[i] starts with "--"; its value is after '=' or the next argument (i moves past it).
Status parse_valued_flag(ParseState& p, const std::vector<std::string>& args, std::size_t& i) {
  const std::string& arg = args[i];
  std::string flag = arg;
  std::string value;
  if (const auto eq = arg.find('='); eq != std::string::npos) {
    flag = arg.substr(0, eq);
    value = arg.substr(eq + 1);
  }
  const auto row = std::find_if(std::begin(kValuedFlags), std::end(kValuedFlags),
                                [&](const ValuedFlag& f) { return f.flag == flag; });
  if (row == std::end(kValuedFlags))
    return usage_error("unknown option " + flag + " (see fencelock --help)");
  if (flag.size() == arg.size()) {
    if (i + 1 >= args.size()) return usage_error(flag + ": needs a value");
    value = args[++i];
  }
  return row->set(p, flag, value);
}

Status parse_command(ParseState& p, const std::string& arg) {
  static constexpr std::pair<std::string_view, Command> kCommands[] = {
      {"run", Command::kRun},
      {"acquire", Command::kAcquire},
      {"extend", Command::kExtend},
      {"release", Command::kRelease},
      {"status", Command::kStatus},
      {"token", Command::kToken},
      {"semaphore", Command::kSemaphore},
      {"revoke", Command::kRevoke},
      {"list", Command::kList},
      {"watch", Command::kWatch}};
  for (const auto& [word, command] : kCommands) {
    if (word != arg) continue;
    p.seen_command = true;
    p.out.command = command;
    return Done{};
  }
  return usage_error("unknown command '" + arg + "' (see fencelock --help)");
}

bool takes_lease(Command command) {
  return command == Command::kExtend || command == Command::kRelease;
}

// The flags given are ones the command takes.
Status check_flags_fit_command(const ParseState& p) {
  if (!p.seen_command) return usage_error("missing command (see fencelock --help)");
  const Command command = p.out.command;
  const bool holds =
      takes_lease(command) || command == Command::kRun || command == Command::kAcquire;
  if (!holds && !p.extra_names.empty())
    return usage_error("--name is only for run, acquire, extend and release");
  if (!holds && p.out.permits)
    return usage_error("--permits is only for run, acquire, extend and release");
  if (p.read && p.write) return usage_error("--read and --write: choose one");
  if (p.out.rw && (!holds || p.out.permits))
    return usage_error(
        "--read and --write are only for run, acquire, extend and release of one "
        "read/write lock");
  if (p.semaphores && p.rwlocks) return usage_error("--semaphores and --rwlocks: choose one");
  if ((p.semaphores || p.rwlocks) && command != Command::kList)
    return usage_error("--semaphores and --rwlocks are only for list");
  if (p.out.list_limit && command != Command::kList) return usage_error("--limit is only for list");
  if (p.out.skip_if_locked && command != Command::kRun)
    return usage_error("--skip-if-locked is only for run");
  if (!p.out.request_id.empty() && ((command != Command::kRun && command != Command::kAcquire) ||
                                    !p.extra_names.empty() || p.out.permits || p.out.rw))
    return usage_error("--request-id is only for a single lock's run and acquire");
  if (p.out.next_token && command != Command::kToken)
    return usage_error("--next is only for token");
  if (p.out.watched_token && command != Command::kWatch)
    return usage_error("--token is only for watch");
  if (command == Command::kRevoke && (p.out.wait.count() > 0 || p.out.wait_forever))
    return usage_error("revoke never waits: --wait is not for revoke");
  return Done{};
}

// NAME (or every --name) into out.names and out.name; LEASE into out.lease for extend/release.
Status place_names_and_lease(ParseState& p, const std::optional<std::string>& lease_env) {
  CliArgs& out = p.out;
  const bool lease = takes_lease(out.command);
  // extend and release of a lock set take every name with --name: a positional would be
  // ambiguous between NAME and LEASE.
  const bool name_positional = !(lease && !p.extra_names.empty());
  const std::size_t most = std::size_t{name_positional} + std::size_t{lease};
  if (p.positional.empty() && p.extra_names.empty()) return usage_error("missing NAME");
  if (p.positional.size() > most) {
    return usage_error("unexpected argument '" + p.positional[most] + "'" +
                       (lease && !p.extra_names.empty()
                            ? " (extend and release of a lock set take every name with --name)"
                        : out.command == Command::kRun
                            ? " (the command goes after '--': fencelock run [options] NAME -- " +
                                  p.positional[most] + " ...)"
                            : ""));
  }
  auto next_positional = p.positional.begin();
  if (name_positional && next_positional != p.positional.end())
    out.names.push_back(*next_positional++);
  out.names.insert(out.names.end(), p.extra_names.begin(), p.extra_names.end());
  if (auto valid = check_names(out); !valid.ok()) return std::move(valid).error();
  out.name = out.names.front();
  for (std::size_t i = 1; i < out.names.size(); ++i) out.name += "," + out.names[i];
  if (!lease) return Done{};
  if (next_positional != p.positional.end())
    out.lease = *next_positional;
  else if (lease_env && !lease_env->empty())
    out.lease = *lease_env;
  else
    return usage_error("missing LEASE (an argument or $FENCELOCK_LEASE)");
  return Done{};
}

}  // namespace

LeaseKind lease_kind_of(const CliArgs& args) noexcept {
  if (args.permits) return LeaseKind::kPermit;
  if (args.rw) return *args.rw;
  return args.names.size() > 1 ? LeaseKind::kSet : LeaseKind::kLock;
}

std::optional<std::chrono::milliseconds> parse_cli_duration(std::string_view text) noexcept {
  struct Unit {
    std::string_view suffix;
    std::int64_t ms;
  };
  // Longest suffix first where one is a prefix of another ("ms" before "m").
  static constexpr Unit kUnits[] = {{"h", 3'600'000}, {"ms", 1}, {"m", 60'000}, {"s", 1000}};
  static constexpr std::int64_t kMax = 100LL * 24 * 3'600'000;
  auto rank = [](std::int64_t ms) {
    return ms == 3'600'000 ? 0 : ms == 60'000 ? 1 : ms == 1000 ? 2 : 3;
  };
  std::int64_t total = 0;
  int next_rank = 0;
  if (text.empty()) return std::nullopt;
  while (!text.empty()) {
    std::size_t digits = 0;
    std::int64_t value = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
      if (digits == 12) return std::nullopt;
      value = value * 10 + (text[digits] - '0');
      ++digits;
    }
    if (digits == 0) return std::nullopt;
    text.remove_prefix(digits);
    const Unit* unit = nullptr;
    for (const Unit& u : kUnits) {
      if (text.starts_with(u.suffix)) {
        unit = &u;
        break;
      }
    }
    if (unit == nullptr || rank(unit->ms) < next_rank) return std::nullopt;
    next_rank = rank(unit->ms) + 1;
    text.remove_prefix(unit->suffix.size());
    if (value > kMax / unit->ms) return std::nullopt;
    total += value * unit->ms;
    if (total > kMax) return std::nullopt;
  }
  return std::chrono::milliseconds(total);
}

std::vector<std::string> endpoints_of(const CliArgs& args) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= args.endpoint.size()) {
    const std::size_t comma = std::min(args.endpoint.find(',', start), args.endpoint.size());
    if (comma > start) out.push_back(args.endpoint.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// What `fencelock --help` prints (the man page and the bash completion are made from it).
constexpr std::string_view kUsage =
    R"(usage: fencelock [-v] [--endpoint URL[,URL...]] [--timeout DURATION] [--cacert PATH] COMMAND ...

Commands:
  run [--ttl 30s] [--wait 0s] [--grace 10s] [--owner TEXT] [--skip-if-locked] NAME -- CMD [ARGS...]
      Acquire NAME, run CMD with FENCELOCK_NAME and FENCELOCK_TOKEN in its environment, keep the
      lease alive while CMD runs, release it when CMD exits and exit with CMD's status. If the
      lease is lost, CMD (its process group) gets SIGTERM, then SIGKILL after --grace, and
      fencelock exits 4. CMD gets the terminal when fencelock runs in its foreground. The
      release after CMD gives up after 1 s (the ttl frees the lock). --skip-if-locked: when
      someone else holds NAME (after --wait), exit 0 without a word (for cron).
  run [--ttl 30s] [--wait 0s] [--owner TEXT] NAME
      Without CMD: acquire NAME, print {"name","token","ttl_ms"}, hold the lock (renewing it)
      until SIGINT (Ctrl-C), SIGTERM or SIGHUP, then release it and exit 0; exit 4 if the lease
      is lost meanwhile.
  run [options] [NAME] --name NAME2 [--name NAME3 ...] [-- CMD [ARGS...]]
      A lock set: every name at once under one lease (all or none, up to 16, in any order).
      CMD gets FENCELOCK_NAMES="a,b" and FENCELOCK_TOKENS="a=17,b=4" (sorted by name; fence a
      write to the resource of name N with N's token) instead of FENCELOCK_NAME/FENCELOCK_TOKEN.
  run [options] --permits N NAME [-- CMD [ARGS...]]
      A permit of the counting semaphore NAME with N permits (1..64; at most N holders at once;
      like `consul lock -n N`). CMD gets FENCELOCK_NAME, FENCELOCK_TOKEN, FENCELOCK_SLOT (0..N-1)
      and FENCELOCK_PERMITS; fence per slot (N holders write at once). Exit 8 if the semaphore
      is live with another N.
  run [options] --read NAME [-- CMD [ARGS...]]
  run [options] --write NAME [-- CMD [ARGS...]]
      A read grant (shared with other readers) or a write grant (alone) of the read/write lock
      NAME. A writer that waits keeps new readers out; its token is above every earlier grant's.
      CMD gets FENCELOCK_NAME, FENCELOCK_TOKEN and FENCELOCK_MODE (read or write).
  acquire [--ttl 30s] [--wait 0s] [--owner TEXT] [--request-id ID] NAME
      --request-id names the acquire (1-64 printable ASCII characters, unique per acquire and
      never shared): run again with the same ID while the lease it was granted is held, it
      prints that same grant instead of failing as locked (for a script that retries after a
      lost answer). Without it, one is made per call and reused by the call's own retries.
      Print {"name","lease","token","ttl_ms","validity_ms"}. With --name (a lock set): print
      {"names","lease","tokens":{"a":17,...},"ttl_ms","validity_ms"}; with --permits N: print
      {"name","permits","slot","lease","token","ttl_ms","validity_ms"}; with --read or --write:
      {"name","mode","lease","token","ttl_ms","validity_ms"}.
  extend [--ttl 30s] NAME [LEASE]
  release NAME [LEASE]
      LEASE defaults to $FENCELOCK_LEASE (keeps it out of the process list). Prints
      {"name","released"}; exits 4 when the lease no longer held the lock. A lock set: every
      name with --name (`extend --name a --name b [LEASE]`), prints {"names",...}; a permit:
      --permits N NAME [LEASE]; a read/write lock's grant: --read or --write NAME [LEASE].
  status NAME
      Print {"name","held","remaining_ms","token","owner","last_token"}.
  list [--limit N] [PREFIX]
      Print {"locks":[{"name","token","owner","remaining_ms"},...]}: every lock held whose name
      starts with PREFIX (all of them without), read page by page; with --limit N, at most N,
      and "truncated": true when there may be more.
  list --semaphores [PREFIX]
      Print {"semaphores":[{"name","permits","held"},...]}: every semaphore with a permit held,
      as `semaphore` prints it.
  list --rwlocks [PREFIX]
      Print {"rwlocks":[{"name","mode","holders","writer_waiting"},...]}: every read/write lock
      with a grant held; mode "read" or "write", each holder {"token","owner","remaining_ms"}.
  revoke [--ttl 30s] [--owner TEXT] NAME
      Take NAME whoever holds it, with a token above the holder's (the key needs the `admin`
      right). Prints the lease as acquire does; the old holder's extend and release fail, and a
      resource that checks tokens refuses its writes once the new token was used.
  watch [--token T] [--wait 30s] NAME
      Wait until NAME is no longer held with token T (without --token: the token of whoever
      holds it now; a free NAME answers at once) — released, expired, revoked or taken again —
      without polling, then print {"name","changed","held","remaining_ms","token","owner"} and
      exit 0; exit 3 if --wait (any length, or "forever") ran out with it unchanged.
  semaphore NAME
      Print {"name","permits","held"}: the live semaphore's permit count (0 when no permit is
      live) and how many are held.
  token [--next] NAME
      Print {"name","token"}: the current token, or with --next a new one.

Options:
  --endpoint URL[,URL...]
                      fencelockd to talk to, http:// or https://, HOST a DNS name or an IP
                      address (default http://127.0.0.1:8080, or $FENCELOCK_ENDPOINT); several,
                      comma-separated, are tried in order: the next one when one cannot be
                      reached (or its name does not resolve)
  --wait DURATION     acquire, run: how long to wait while someone else holds NAME (default 0s:
                      try once); any length (the CLI asks again when one request's wait, at
                      most the service's --max-wait, runs out), or "forever". watch: how long
                      to wait for a change (default 30s)
  -v, --verbose       say what fencelock does, on stderr (never the lease or the API key)
  --timeout DURATION  one request's round trip (default 5s)
  --api-key SECRET    the API key for a fencelockd with --auth-file; prefer $FENCELOCK_API_KEY,
                      which keeps it out of the process list
  --cacert PATH       https:// endpoint: CA certificates (PEM) that sign the server's certificate
                      (default: the system's; or $FENCELOCK_CACERT). With an http:// endpoint,
                      --cacert, --cert and --key are refused (exit 2)
  --cert PATH         client certificate (PEM) for a fencelockd with --tls-client-ca, or
                      $FENCELOCK_CERT; --key PATH (or $FENCELOCK_KEY) is its private key
  --name NAME         run, acquire, extend, release: one more name; two names or more make a lock
                      set (at most 16, each once; refused with exit 2 before any request)
  --permits N         run, acquire, extend, release: NAME is a counting semaphore of N permits
  --read, --write     run, acquire, extend, release: NAME is a read/write lock, taken to read
                      (shared) or to write (alone)
  --semaphores        list: the semaphores with a permit held, instead of the locks
  --rwlocks           list: the read/write locks with a grant held, instead of the locks
  --limit N           list: print at most N entries (1..10000000), then "truncated": true if
                      more may be held; without it, every entry
  Durations: whole numbers with h, m, s or ms, largest first: 500ms, 30s, 2m, 1h30m.

Exit codes:
  0  success (run: CMD's exit status instead; 128+N if CMD died of signal N)
  1  unexpected error
  2  bad command line
  3  locked: held by someone else and --wait ran out
  4  not held: extend or release found the lease gone (expired, released or taken over);
     run lost the lease (and stopped CMD)
  5  unavailable: the service or a majority of its lock nodes cannot answer now (or the API
     key is over its rate)
  6  denied: no API key, an unknown one, or one without the right or the name
  7  TLS failed: the server's certificate is not trusted (--cacert) or not for this host, or
     the server refused the TLS version or the client certificate
  8  permits mismatch: --permits N, but the semaphore is live with another count (the message
     names it)
  127 run: CMD could not be started
)";

std::string cli_usage() {
  return std::string(kUsage);
}

void fill_from_environment(CliArgs& args,
                           const std::function<std::optional<std::string>(const char*)>& env) {
  for (const auto& [name, field] :
       {std::pair{"FENCELOCK_API_KEY", &args.api_key}, std::pair{"FENCELOCK_CACERT", &args.cacert},
        std::pair{"FENCELOCK_CERT", &args.cert}, std::pair{"FENCELOCK_KEY", &args.key}}) {
    if (!field->empty()) continue;
    if (auto value = env(name); value && !value->empty()) *field = std::move(*value);
  }
}

Status check_tls_files(const CliArgs& args) {
  if (args.cacert.empty() && args.cert.empty() && args.key.empty()) return Done{};
  std::string plain;
  for (const auto& endpoint : endpoints_of(args)) {
    if (endpoint.starts_with("http://")) plain = endpoint;  // https://, or malformed: the SDK says
  }
  if (plain.empty()) return Done{};
  return usage_error(
      "--cacert, --cert and --key (or FENCELOCK_CACERT, FENCELOCK_CERT, "
      "FENCELOCK_KEY) are for https:// endpoints: '" +
      plain +
      "' is plain HTTP, and the API key and leases would go unencrypted "
      "(use https://)");
}

int exit_code_for(const Error& error) noexcept {
  switch (error.code) {
    case ErrorCode::kLocked:
      return kExitLocked;
    case ErrorCode::kNotHeld:
      return kExitNotHeld;
    case ErrorCode::kUnavailable:
    case ErrorCode::kRateLimited:
    case ErrorCode::kTransport:
      return kExitUnavailable;
    case ErrorCode::kDenied:
      return kExitDenied;
    case ErrorCode::kTls:
      return kExitTls;
    case ErrorCode::kPermitsMismatch:
      return kExitPermitsMismatch;
    case ErrorCode::kInvalidArgument:
      return kExitUsage;
    case ErrorCode::kInternal:
      return kExitError;
  }
  return kExitError;
}

Result<CliArgs> parse_cli(const std::vector<std::string>& args,
                          const std::optional<std::string>& endpoint_env,
                          const std::optional<std::string>& lease_env) {
  ParseState p;
  if (endpoint_env && !endpoint_env->empty()) p.out.endpoint = *endpoint_env;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      if (p.out.command != Command::kRun)
        return usage_error("'--' is only for run: fencelock run NAME -- CMD");
      p.out.command_line.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (arg == "-h" || arg == "--help" || arg == "--version") {
      p.out.command = arg == "--version" ? Command::kVersion : Command::kHelp;
      return std::move(p.out);
    }
    Status status = Done{};
    if (const Switch* sw = find_switch(arg)) {
      sw->set(p);
    } else if (arg.starts_with("--")) {
      status = parse_valued_flag(p, args, i);
    } else if (!p.seen_command) {
      status = parse_command(p, arg);
    } else {
      p.positional.push_back(arg);
    }
    if (!status.ok()) return std::move(status).error();
  }
  if (p.read || p.write) p.out.rw = p.write ? LeaseKind::kWrite : LeaseKind::kRead;
  if (p.semaphores) p.out.list_kind = ListKind::kSemaphores;
  if (p.rwlocks) p.out.list_kind = ListKind::kRwLocks;
  if (auto fits = check_flags_fit_command(p); !fits.ok()) return std::move(fits).error();
  if (p.out.command == Command::kList) {  // an optional PREFIX instead of NAME
    if (p.positional.size() > 1)
      return usage_error("unexpected argument '" + p.positional[1] + "' (list takes one PREFIX)");
    if (!p.positional.empty()) p.out.name = p.positional.front();
    return std::move(p.out);
  }
  if (auto placed = place_names_and_lease(p, lease_env); !placed.ok())
    return std::move(placed).error();
  return std::move(p.out);
}

}  // namespace fencelock::cli
