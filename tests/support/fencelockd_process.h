// The real fencelockd binary, started by a test on a free loopback port and stopped (SIGKILL if
// it does not exit on SIGTERM) when the test ends. Its log goes to a file the test can read.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "child_process.h"

namespace fencelock::testing {

class Fencelockd {
 public:
  // Starts fencelockd with `args` plus --listen 127.0.0.1:<free port> and waits until /healthz
  // answers (10 s) — when `args` hold --tls-cert, until a TLS handshake (any certificate) does;
  // `env`
  // ("NAME=value") is added to its environment. Throws std::runtime_error
  // with the log if it exits or never answers.
  Fencelockd(const std::filesystem::path& dir, std::vector<std::string> args,
             const std::vector<std::string>& env = {});
  ~Fencelockd();

  std::uint16_t port() const noexcept { return port_; }
  std::string log() const;
  // Whether the log shows `text` within `limit` (it is read again every 20 ms).
  bool log_shows(const std::string& text,
                 std::chrono::milliseconds limit = std::chrono::seconds(10)) const;
  // SIGTERM (or `signal`), wait up to `limit`; the exit code, nullopt if it had to be killed.
  std::optional<int> stop(int signal, std::chrono::milliseconds limit = std::chrono::seconds(10));
  bool running() const noexcept { return process_.running(); }
  pid_t pid() const noexcept { return process_.pid(); }

 private:
  std::filesystem::path log_path_;
  std::uint16_t port_ = 0;
  ChildProcess process_;
};

// Runs fencelockd with `args` to completion (for flag errors, --help, --version): exit code and
// everything it printed.
struct FinishedRun {
  int exit_code = -1;
  std::string output;
};
FinishedRun run_fencelockd(const std::filesystem::path& dir, const std::vector<std::string>& args,
                           std::chrono::milliseconds limit = std::chrono::seconds(10));

// Path of the fencelockd binary under test: $FENCELOCK_TEST_FENCELOCKD if set (another build's,
// e.g. to see a new test fail on the code before a fix), else FENCELOCKD_BINARY from the build.
std::string fencelockd_binary();

}  // namespace fencelock::testing
