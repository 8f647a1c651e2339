// fencelockd: the fencelock HTTP/JSON lock service (docs/api.md, docs/operations.md).
//
// Parses flags, FENCELOCK_* environment variables and an optional JSON config file (config.h);
// a bad value stops it at once with a one-line message naming the flag and exit code 2. Then it
// serves until SIGTERM or SIGINT and exits 0 after a graceful shutdown; 1 if it cannot start.
// `fencelockd keys new …` makes an API key instead (auth/keys_command.h).
#include <sys/resource.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app/config.h"
#include "app/service.h"
#include "auth/keys_command.h"
#include "ops/log.h"
#include "version.h"

namespace {

// Each connection is a file descriptor: allow as many as the hard limit permits, and keep
// max_connections below it (with room for the lock nodes, the token store and logs), so the
// limit is met by refusing connections, not by failing accept().
void fit_connections_to_file_limit(fencelock::service::ServiceConfig& config) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
    ::getrlimit(RLIMIT_NOFILE, &limit);
  }
  constexpr rlim_t kReserve = 64;
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur <= kReserve) return;
  const auto usable = static_cast<std::size_t>(limit.rlim_cur - kReserve);
  if (config.max_connections > usable) {
    fencelock::service::log_event(
        fencelock::service::LogLevel::kWarning, "max_connections_lowered",
        {{"from", config.max_connections},
         {"to", usable},
         {"open_file_limit", static_cast<std::uint64_t>(limit.rlim_cur)}});
    config.max_connections = usable;
  }
}

}  // namespace

namespace {

int run(int argc, char** argv) {
  using namespace fencelock::service;
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "keys") {
    return run_keys_command(std::vector<std::string>(args.begin() + 1, args.end()), stdout, stderr);
  }
  auto parsed = parse_config(args, [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  });
  if (!parsed.ok()) {
    std::fprintf(stderr, "fencelockd: %s\n", parsed.error().message.c_str());
    return 2;
  }
  switch (parsed->command) {
    case Command::kHelp: {
      const std::string usage = usage_text();
      std::fwrite(usage.data(), 1, usage.size(), stdout);
      return 0;
    }
    case Command::kVersion:
      std::printf("fencelockd %s\n", kVersion);
      return 0;
    case Command::kRun:
      break;
  }
  ServiceConfig config = parsed->config;
  configure_log(config.log_format, config.log_level);
  fit_connections_to_file_limit(config);
  for (const auto& source : parsed->sources)
    log_event(LogLevel::kInfo, "config_source", {{"source", source}});
  const auto outcome = run_service(config);
  std::signal(SIGHUP, SIG_IGN);  // run_service()'s handler is gone: SIG_DFL again
  if (!outcome.ok()) {
    log_event(LogLevel::kError, "cannot_start", {{"reason", outcome.error().message}});
    std::fprintf(stderr, "fencelockd: %s\n", outcome.error().message.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

// The one catch of the program: a surprise (out of memory, a bug) is reported, not a terminate().
int main(int argc, char** argv) {
  // SIGHUP asks for a reload (docs/operations.md); its default action would end the process. It is
  // ignored until the reloader's handler is in place (run_service()), and again after it is gone.
  std::signal(SIGHUP, SIG_IGN);
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", "fencelockd", e.what());
    return 1;
  }
}
