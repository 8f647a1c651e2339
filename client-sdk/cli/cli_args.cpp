#include "cli_args.h"

namespace fencelock::cli {

namespace {

Error usage_error(std::string message) {
  return Error{ErrorCode::kInvalidArgument, std::move(message), 0, std::nullopt};
}

}  // namespace

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

std::string cli_usage() {
  return R"(usage: fencelock [-v] [--endpoint URL[,URL...]] [--timeout DURATION] [--cacert PATH] COMMAND ...

Commands:
  run [--ttl 30s] [--wait 0s] [--grace 10s] [--owner TEXT] NAME -- CMD [ARGS...]
      Acquire NAME, run CMD with FENCELOCK_NAME and FENCELOCK_TOKEN in its environment, keep the
      lease alive while CMD runs, release it when CMD exits and exit with CMD's status. If the
      lease is lost, CMD (its process group) gets SIGTERM, then SIGKILL after --grace, and
      fencelock exits 4. CMD gets the terminal when fencelock runs in its foreground.
  run [--ttl 30s] [--wait 0s] [--owner TEXT] NAME
      Without CMD: acquire NAME, print {"name","token","ttl_ms"}, hold the lock (renewing it)
      until SIGINT (Ctrl-C), SIGTERM or SIGHUP, then release it and exit 0; exit 4 if the lease
      is lost meanwhile.
  acquire [--ttl 30s] [--wait 0s] [--owner TEXT] NAME
      Print {"name","lease","token","ttl_ms","validity_ms"}.
  extend [--ttl 30s] NAME [LEASE]
  release NAME [LEASE]
      LEASE defaults to $FENCELOCK_LEASE (keeps it out of the process list). Prints
      {"name","released"}; exits 4 when the lease no longer held the lock.
  status NAME
      Print {"name","held","remaining_ms","last_token"}.
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
                      most the service's --max-wait, runs out), or "forever"
  -v, --verbose       say what fencelock does, on stderr (never the lease or the API key)
  --timeout DURATION  one request's round trip (default 5s)
  --api-key SECRET    the API key for a fencelockd with --auth-file; prefer $FENCELOCK_API_KEY,
                      which keeps it out of the process list
  --cacert PATH       https:// endpoint: CA certificates (PEM) that sign the server's certificate
                      (default: the system's; or $FENCELOCK_CACERT). With an http:// endpoint,
                      --cacert, --cert and --key are refused (exit 2)
  --cert PATH         client certificate (PEM) for a fencelockd with --tls-client-ca, or
                      $FENCELOCK_CERT; --key PATH (or $FENCELOCK_KEY) is its private key
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
  127 run: CMD could not be started
)";
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
  CliArgs out;
  if (endpoint_env && !endpoint_env->empty()) out.endpoint = *endpoint_env;
  std::vector<std::string> positional;
  bool seen_command = false;

  auto duration_of = [](const std::string& flag,
                        const std::string& text) -> Result<std::chrono::milliseconds> {
    auto parsed = parse_cli_duration(text);
    if (!parsed) {
      return usage_error(flag + ": expected a duration like 500ms, 30s, 2m or 1h30m, got '" + text +
                         "'");
    }
    return *parsed;
  };

  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      if (out.command != Command::kRun)
        return usage_error("'--' is only for run: fencelock run NAME -- CMD");
      out.command_line.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (arg == "-h" || arg == "--help") {
      out.command = Command::kHelp;
      return out;
    }
    if (arg == "--version") {
      out.command = Command::kVersion;
      return out;
    }
    if (arg == "--next") {
      out.next_token = true;
      continue;
    }
    if (arg == "-v" || arg == "--verbose") {
      out.verbose = true;
      continue;
    }
    if (arg.starts_with("--")) {
      std::string flag = arg;
      std::string value;
      if (const auto eq = arg.find('='); eq != std::string::npos) {
        flag = arg.substr(0, eq);
        value = arg.substr(eq + 1);
      } else {
        if (i + 1 >= args.size()) return usage_error(flag + ": needs a value");
        value = args[++i];
      }
      if (flag == "--endpoint") {
        out.endpoint = value;
      } else if (flag == "--api-key") {
        out.api_key = value;
      } else if (flag == "--cacert") {
        out.cacert = value;
      } else if (flag == "--cert") {
        out.cert = value;
      } else if (flag == "--key") {
        out.key = value;
      } else if (flag == "--owner") {
        out.owner = value;
      } else if (flag == "--wait" && value == "forever") {
        out.wait_forever = true;
      } else if (flag == "--timeout" || flag == "--ttl" || flag == "--wait" || flag == "--grace") {
        auto d = duration_of(flag, value);
        if (!d.ok()) return std::move(d).error();
        if (flag == "--wait") out.wait_forever = false;
        (flag == "--timeout" ? out.timeout
         : flag == "--ttl"   ? out.ttl
         : flag == "--wait"  ? out.wait
                             : out.grace) = d.value();
      } else {
        return usage_error("unknown option " + flag + " (see fencelock --help)");
      }
      continue;
    }
    if (!seen_command) {
      seen_command = true;
      if (arg == "run")
        out.command = Command::kRun;
      else if (arg == "acquire")
        out.command = Command::kAcquire;
      else if (arg == "extend")
        out.command = Command::kExtend;
      else if (arg == "release")
        out.command = Command::kRelease;
      else if (arg == "status")
        out.command = Command::kStatus;
      else if (arg == "token")
        out.command = Command::kToken;
      else
        return usage_error("unknown command '" + arg + "' (see fencelock --help)");
      continue;
    }
    positional.push_back(arg);
  }

  if (!seen_command) return usage_error("missing command (see fencelock --help)");
  const bool takes_lease = out.command == Command::kExtend || out.command == Command::kRelease;
  const std::size_t most = takes_lease ? 2 : 1;
  if (positional.empty()) return usage_error("missing NAME");
  if (positional.size() > most)
    return usage_error("unexpected argument '" + positional[most] + "'");
  out.name = positional[0];
  if (takes_lease) {
    if (positional.size() == 2)
      out.lease = positional[1];
    else if (lease_env && !lease_env->empty())
      out.lease = *lease_env;
    else
      return usage_error("missing LEASE (an argument or $FENCELOCK_LEASE)");
  }
  if (out.next_token && out.command != Command::kToken)
    return usage_error("--next is only for token");
  return out;
}

}  // namespace fencelock::cli
