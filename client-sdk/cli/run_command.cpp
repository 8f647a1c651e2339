#include "run_command.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

extern char** environ;

#include "fencelock/lease_keeper.h"

namespace fencelock::cli {

namespace {

std::atomic<int> g_forward_signal{0};

extern "C" void remember_signal(int signal_number) {
  g_forward_signal.store(signal_number);
}

int exit_status_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return kExitError;
}

// Starts CMD in a new process group. Returns its pid, or -1 (errno set) if fork failed; an exec
// failure shows as exit status 127.
pid_t start_child(const CliArgs& args, std::uint64_t token) {
  // Everything the child needs is built here: after fork only async-signal-safe calls are allowed
  // (other threads — the lease keeper's — may hold the allocator's lock).
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (entry.starts_with("FENCELOCK_NAME=") || entry.starts_with("FENCELOCK_TOKEN=") ||
        entry.starts_with("FENCELOCK_LEASE=")) {
      continue;  // ours below; and the lease never reaches the command
    }
    env_strings.emplace_back(entry);
  }
  env_strings.push_back("FENCELOCK_NAME=" + args.name);
  env_strings.push_back("FENCELOCK_TOKEN=" + std::to_string(token));
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (const auto& a : args.command_line) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  const pid_t child = ::fork();
  if (child != 0) return child;
  ::setpgid(0, 0);
  ::execvpe(argv[0], argv.data(), envp.data());
  const char message[] = "fencelock: cannot start the command\n";
  const ssize_t ignored = ::write(STDERR_FILENO, message, sizeof(message) - 1);
  (void)ignored;
  ::_exit(kExitCannotRun);
}

}  // namespace

int run_command(Client& client, const CliArgs& args) {
  auto lease = client.acquire(args.name, args.ttl, args.wait, args.owner);
  if (!lease.ok()) {
    if (lease.error().code == ErrorCode::kLocked) {
      std::fprintf(stderr, "fencelock: '%s' is held by another lease%s\n", args.name.c_str(),
                   args.wait.count() > 0 ? " and the wait ran out" : "");
    } else {
      std::fprintf(stderr, "fencelock: cannot acquire '%s': %s\n", args.name.c_str(),
                   lease.error().message.c_str());
    }
    return exit_code_for(lease.error());
  }
  const std::uint64_t token = lease->token();

  struct sigaction forward {};
  forward.sa_handler = remember_signal;
  sigemptyset(&forward.sa_mask);
  for (const int s : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(s, &forward, nullptr);

  LeaseKeeper keeper(client, std::move(lease).value());
  const pid_t child = start_child(args, token);
  if (child < 0) {
    std::fprintf(stderr, "fencelock: cannot start the command: %s\n", std::strerror(errno));
    (void)keeper.release();
    return kExitCannotRun;
  }
  ::setpgid(child, child);  // also from here: no race with the child's own call

  bool lost = false;
  std::chrono::steady_clock::time_point kill_at{};
  int wait_status = 0;
  for (;;) {
    const pid_t done = ::waitpid(child, &wait_status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR) break;
    if (const int s = g_forward_signal.exchange(0); s != 0) ::kill(-child, s);
    if (!lost && keeper.lost()) {
      lost = true;
      const auto reason = keeper.lost_reason();
      std::fprintf(stderr, "fencelock: lost the lease on '%s' (%s); stopping the command\n",
                   args.name.c_str(), reason ? reason->message.c_str() : "unknown");
      ::kill(-child, SIGTERM);
      kill_at = std::chrono::steady_clock::now() + args.grace;
    }
    if (lost && std::chrono::steady_clock::now() >= kill_at) {
      ::kill(-child, SIGKILL);
      kill_at = std::chrono::steady_clock::time_point::max();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  (void)keeper.release();
  if (lost) return kExitNotHeld;
  return exit_status_of(wait_status);
}

}  // namespace fencelock::cli
