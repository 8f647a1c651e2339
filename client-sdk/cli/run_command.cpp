#include "run_command.h"

#include <fcntl.h>
#include <pthread.h>
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

#include "acquire_waiting.h"
#include "child_environment.h"
#include "fencelock/lease_keeper.h"
#include "lease_json.h"

namespace fencelock::cli {

namespace {

std::atomic<int> g_forward_signal{0};

extern "C" void remember_signal(int signal_number) {
  g_forward_signal.store(signal_number);
}

// The terminal on stdin, when fencelock runs in its foreground (started from an interactive shell,
// not in the background). The command then gets the terminal for as long as it runs, as a shell
// gives it to the job it starts: in its own process group without it, a command that reads the
// terminal is stopped by SIGTTIN and nobody would continue it, and Ctrl-C would not reach it.
bool runs_in_terminal_foreground() {
  return ::isatty(STDIN_FILENO) == 1 && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp();
}

// Makes `group` the terminal's foreground process group. Called from a background group,
// tcsetpgrp raises SIGTTOU unless the calling thread blocks it. Async-signal-safe.
void give_terminal_to(pid_t group) {
  sigset_t ttou;
  sigset_t old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  ::pthread_sigmask(SIG_BLOCK, &ttou, &old);
  ::tcsetpgrp(STDIN_FILENO, group);
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// Sends `signal_number` to the command's process group, then SIGCONT: a stopped process would
// only see the signal once continued.
void signal_group(pid_t group, int signal_number) {
  ::kill(-group, signal_number);
  if (signal_number != SIGKILL && signal_number != SIGCONT) ::kill(-group, SIGCONT);
}

int exit_status_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return kExitError;
}

// Starts CMD in a new process group, the terminal's foreground group if `with_terminal`, with
// `environment` ("NAME=value" entries). Returns its pid once CMD runs, or -1 with errno set: why
// fork, or exec of CMD (then the child has been reaped), failed.
pid_t start_child(const CliArgs& args, std::vector<std::string> environment, bool with_terminal) {
  // Everything the child needs is built here: after fork only async-signal-safe calls are allowed
  // (other threads — the lease keeper's — may hold the allocator's lock).
  std::vector<char*> envp;
  envp.reserve(environment.size() + 1);
  for (auto& e : environment) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (const auto& a : args.command_line) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  // exec's errno comes back through a pipe that a successful exec closes (O_CLOEXEC).
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return -1;
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(report[0]);
    ::setpgid(0, 0);
    if (with_terminal) give_terminal_to(::getpid());
    ::execvpe(argv[0], argv.data(), envp.data());
    const int failure = errno;
    const ssize_t ignored = ::write(report[1], &failure, sizeof(failure));
    (void)ignored;
    ::_exit(kExitCannotRun);
  }
  const int fork_failure = errno;
  ::close(report[1]);
  if (child < 0) {
    ::close(report[0]);
    errno = fork_failure;
    return -1;
  }
  int exec_failure = 0;
  ssize_t got = 0;
  do {
    got = ::read(report[0], &exec_failure, sizeof(exec_failure));
  } while (got < 0 && errno == EINTR);
  ::close(report[0]);
  if (got != static_cast<ssize_t>(sizeof(exec_failure))) return child;  // CMD runs
  int ignored_status = 0;
  while (::waitpid(child, &ignored_status, 0) < 0 && errno == EINTR) {
  }
  errno = exec_failure;
  return -1;
}

// How long the release after CMD may take: a hung fencelockd must not keep a cron job running.
constexpr std::chrono::milliseconds kReleaseBound{1000};

// Releases after CMD ended, within kReleaseBound; says so when it did not finish.
void release_after_command(LeaseKeeper& keeper, const CliArgs& args) {
  auto released = keeper.release(kReleaseBound);
  if (!released.ok()) {
    std::fprintf(stderr,
                 "fencelock: release of '%s' gave up after %lld ms (its ttl frees the lock): %s\n",
                 args.name.c_str(), static_cast<long long>(kReleaseBound.count()),
                 released.error().message.c_str());
  }
}

// The command was stopped by a job-control signal: Ctrl-Z (SIGTSTP), or a read or write of a
// terminal it does not own (SIGTTIN, SIGTTOU: fencelock itself runs in the background). Its
// process group is not the shell's job, so the shell would never continue it: fencelock stops
// too (the shell then shows the job stopped; the lease is not renewed meanwhile), and when
// continued (`fg`, `bg`) gives the terminal back if it is in the foreground and continues the
// command. A process group whose parent is in another session cannot stop (POSIX: orphaned);
// then the command is simply continued. Returns whether the command now has the terminal.
bool on_job_control_stop(pid_t child, int stop_signal, bool child_has_terminal) {
  if (stop_signal != SIGTSTP && stop_signal != SIGTTIN && stop_signal != SIGTTOU)
    return child_has_terminal;
  if (child_has_terminal) give_terminal_to(::getpgrp());
  ::raise(SIGTSTP);
  child_has_terminal = runs_in_terminal_foreground();
  if (child_has_terminal) give_terminal_to(child);
  ::kill(-child, SIGCONT);
  return child_has_terminal;
}

// With -v: one line per renewal the keeper made since the last call.
void report_renewals(const LeaseKeeper& keeper, const CliArgs& args, std::uint32_t& reported) {
  const std::uint32_t renewals = keeper.renewals();
  if (renewals == reported) return;
  reported = renewals;
  say(args, "renewed '" + args.name + "' (" + std::to_string(renewals) + " so far)");
}

// `run NAME` without a command: prints `held` (lease_json.h), holds the lock until SIGINT,
// SIGTERM or SIGHUP (then releases it, exit 0) or until the lease is lost (exit kExitNotHeld),
// renewing it meanwhile.
int hold(LeaseKeeper& keeper, const std::string& held, const CliArgs& args) {
  std::printf("%s\n", held.c_str());
  std::fflush(stdout);
  say(args, "holding '" + args.name + "' until SIGINT (Ctrl-C), SIGTERM or SIGHUP");
  std::uint32_t reported = 0;
  for (;;) {
    if (const int s = g_forward_signal.exchange(0); s != 0) {
      say(args, std::string("got ") +
                    (s == SIGINT    ? "SIGINT"
                     : s == SIGTERM ? "SIGTERM"
                                    : "SIGHUP") +
                    "; releasing '" + args.name + "'");
      break;
    }
    if (keeper.lost()) {
      const auto reason = keeper.lost_reason();
      std::fprintf(stderr, "fencelock: lost the lease on '%s' (%s)\n", args.name.c_str(),
                   reason ? reason->message.c_str() : "unknown");
      (void)keeper.release();
      return kExitNotHeld;
    }
    report_renewals(keeper, args, reported);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto released = keeper.release();
  if (!released.ok()) {
    std::fprintf(stderr, "fencelock: release '%s': %s (the ttl frees it)\n", args.name.c_str(),
                 released.error().message.c_str());
    return exit_code_for(released.error());
  }
  if (!released.value()) {
    std::fprintf(stderr, "fencelock: '%s' was no longer held when released\n", args.name.c_str());
    return kExitNotHeld;
  }
  return kExitOk;
}

}  // namespace

int run_command(Client& client, const CliArgs& args) {
  auto lease = acquire_waiting(client, args);
  if (!lease.ok()) {
    if (lease.error().code == ErrorCode::kLocked && args.skip_if_locked) {
      say(args, "'" + args.name + "' is held by another lease; skipped (--skip-if-locked)");
      return kExitOk;
    }
    if (lease.error().code == ErrorCode::kLocked) {
      const std::string what = args.permits            ? "every permit of '" + args.name + "' is"
                               : args.names.size() > 1 ? "a name of '" + args.name + "' is"
                                                       : "'" + args.name + "' is";
      std::fprintf(stderr, "fencelock: %s held by another lease%s\n", what.c_str(),
                   args.wait.count() > 0 ? " and the wait ran out" : "");
    } else {
      std::fprintf(stderr, "fencelock: cannot acquire '%s': %s\n", args.name.c_str(),
                   lease.error().message.c_str());
    }
    return exit_code_for(lease.error());
  }
  std::vector<std::string> inherited;
  for (char** e = environ; *e != nullptr; ++e) inherited.emplace_back(*e);
  std::vector<std::string> environment = child_environment(inherited, lease.value());
  const std::string held = held_json(lease.value()).dump();

  struct sigaction forward {};
  forward.sa_handler = remember_signal;
  sigemptyset(&forward.sa_mask);
  for (const int s : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(s, &forward, nullptr);

  LeaseKeeper keeper(client, std::move(lease).value());
  if (args.command_line.empty()) return hold(keeper, held, args);
  bool with_terminal = runs_in_terminal_foreground();
  const pid_t child = start_child(args, std::move(environment), with_terminal);
  if (child < 0) {
    const int failure = errno;
    if (with_terminal) give_terminal_to(::getpgrp());
    std::fprintf(stderr, "fencelock: cannot start '%s': %s\n", args.command_line.front().c_str(),
                 std::strerror(failure));
    release_after_command(keeper, args);
    return kExitCannotRun;
  }
  ::setpgid(child, child);  // also from here: no race with the child's own calls
  if (with_terminal) give_terminal_to(child);

  say(args, "started the command (pid " + std::to_string(child) + ")");
  std::uint32_t reported = 0;
  bool lost = false;
  std::chrono::steady_clock::time_point kill_at{};
  int wait_status = 0;
  for (;;) {
    const pid_t done = ::waitpid(child, &wait_status, WNOHANG | WUNTRACED);
    if (done == child && WIFSTOPPED(wait_status)) {
      with_terminal = on_job_control_stop(child, WSTOPSIG(wait_status), with_terminal);
      continue;
    }
    if (done == child) break;
    if (done < 0 && errno != EINTR) break;
    if (const int s = g_forward_signal.exchange(0); s != 0) signal_group(child, s);
    if (!lost && keeper.lost()) {
      lost = true;
      const auto reason = keeper.lost_reason();
      std::fprintf(stderr, "fencelock: lost the lease on '%s' (%s); stopping the command\n",
                   args.name.c_str(), reason ? reason->message.c_str() : "unknown");
      signal_group(child, SIGTERM);
      kill_at = std::chrono::steady_clock::now() + args.grace;
    }
    if (lost && std::chrono::steady_clock::now() >= kill_at) {
      ::kill(-child, SIGKILL);
      kill_at = std::chrono::steady_clock::time_point::max();
    }
    report_renewals(keeper, args, reported);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (with_terminal) give_terminal_to(::getpgrp());
  say(args, "the command ended (status " + std::to_string(exit_status_of(wait_status)) +
                "); releasing '" + args.name + "'");
  release_after_command(keeper, args);
  if (lost) return kExitNotHeld;
  return exit_status_of(wait_status);
}

}  // namespace fencelock::cli
