// A child process on a pseudo-terminal of its own, as a program started from an interactive shell
// sees it: stdin, stdout and stderr are the terminal, and the child leads its session in the
// terminal's foreground process group. Killed (SIGKILL) and reaped when destroyed; the terminal
// is closed then too (its session gets SIGHUP).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace fencelock::testing {

class PtyProcess {
 public:
  // Starts argv[0] (looked up in PATH) with `extra_env` ("NAME=value") added to the environment.
  // Throws std::runtime_error if forkpty fails. A failed exec shows as exit code 127.
  PtyProcess(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env);
  ~PtyProcess();
  PtyProcess(const PtyProcess&) = delete;
  PtyProcess& operator=(const PtyProcess&) = delete;

  pid_t pid() const noexcept { return pid_; }
  // Types `text` on the terminal.
  void type(const std::string& text);
  // Reads the terminal until its output contains `wanted` or `limit` passes. True if it appeared.
  bool wait_for_output(const std::string& wanted, std::chrono::milliseconds limit);
  // Everything the terminal showed so far.
  const std::string& output() const noexcept { return output_; }
  // Waits up to `limit` for the exit code (128 + N for signal N); nullopt if still running.
  std::optional<int> wait_exit(std::chrono::milliseconds limit);
  void signal(int signal_number) noexcept;

 private:
  void drain();

  pid_t pid_ = -1;
  int master_ = -1;
  std::string output_;
};

}  // namespace fencelock::testing
