#include "pty_process.h"

#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "child_process.h"

extern char** environ;

namespace fencelock::testing {

PtyProcess::PtyProcess(const std::vector<std::string>& argv,
                       const std::vector<std::string>& extra_env) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // Built before the fork: after it only async-signal-safe calls are allowed.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  env_strings.insert(env_strings.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();

  const pid_t child = ::forkpty(&master_, nullptr, nullptr, nullptr);
  if (child < 0) throw std::runtime_error(std::string("forkpty: ") + std::strerror(errno));
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::execvpe(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  pid_ = child;
  ::fcntl(master_, F_SETFL, ::fcntl(master_, F_GETFL) | O_NONBLOCK);
}

PtyProcess::~PtyProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  if (master_ >= 0) ::close(master_);
}

void PtyProcess::type(const std::string& text) {
  std::size_t written = 0;
  for (int attempts = 0; written < text.size() && attempts < 1000; ++attempts) {
    const ssize_t n = ::write(master_, text.data() + written, text.size() - written);
    if (n > 0)
      written += static_cast<std::size_t>(n);
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void PtyProcess::drain() {
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(master_, buffer, sizeof buffer);
    if (n <= 0) return;  // EAGAIN, or EIO once every process of the terminal has closed it
    output_.append(buffer, static_cast<std::size_t>(n));
  }
}

bool PtyProcess::wait_for_output(const std::string& wanted, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    drain();
    if (output_.find(wanted) != std::string::npos) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::optional<int> PtyProcess::wait_exit(std::chrono::milliseconds limit) {
  if (pid_ <= 0) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    drain();
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      drain();
      return exit_code_of(status);
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void PtyProcess::signal(int signal_number) noexcept {
  if (pid_ > 0) ::kill(pid_, signal_number);
}

}  // namespace fencelock::testing
