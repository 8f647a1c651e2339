// A child process owned by a test: started with fork/exec, its stdout and stderr appended to a
// file, killed (SIGKILL) and reaped when the ChildProcess is destroyed. If the test process dies,
// the kernel kills the child too (PR_SET_DEATHSIG, tied to the thread that started it).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace fencelock::testing {

class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();  // SIGKILL + reap if running; never throws
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts argv[0] (looked up in PATH) with `extra_env` ("NAME=value") added to the environment.
  // Throws std::runtime_error if fork fails. A failed exec shows as exit code 127.
  void start(const std::vector<std::string>& argv, const std::filesystem::path& output,
             const std::vector<std::string>& extra_env = {});

  bool running() const noexcept { return pid_ > 0; }
  pid_t pid() const noexcept { return pid_; }

  // Whether it has exited (reaps it); nullopt while running.
  std::optional<int> poll_exit();
  // Sends `signal` and waits up to `limit` for the exit status; SIGKILL after that (nullopt then).
  std::optional<int> stop(int signal, std::chrono::milliseconds limit);
  void kill() noexcept;  // SIGKILL and reap
  void signal(int signal) noexcept;

 private:
  pid_t pid_ = -1;
};

// Decoded wait status: the exit code, or 128 + signal number.
int exit_code_of(int wait_status);

}  // namespace fencelock::testing
