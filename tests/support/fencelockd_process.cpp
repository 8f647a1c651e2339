#include "fencelockd_process.h"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <thread>

#include "http_client.h"
#include "redis_server.h"
#include "tls_client.h"

namespace fencelock::testing {

namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

std::string fencelockd_binary() {
  // Another build's daemon, to show that a new test fails on the code before a fix.
  if (const char* other = std::getenv("FENCELOCK_TEST_FENCELOCKD"); other != nullptr && *other)
    return other;
#ifdef FENCELOCKD_BINARY
  return FENCELOCKD_BINARY;
#else
  return "fencelockd";
#endif
}

Fencelockd::Fencelockd(const std::filesystem::path& dir, std::vector<std::string> args,
                       const std::vector<std::string>& env) {
  static int instance = 0;
  log_path_ = dir / ("fencelockd-" + std::to_string(++instance) + ".log");
  const bool tls = std::find(args.begin(), args.end(), "--tls-cert") != args.end();
  auto healthy = [this, tls] {
    if (!tls)
      return HttpClient(port_, std::chrono::milliseconds(500)).get("/healthz").status == 200;
    // The handshake is the sign of life: it completes (TLS 1.3) even when a client certificate
    // is required, and this probe has none.
    return TlsClient(port_, TlsClientOptions{{}, {}, {}, 0, std::chrono::milliseconds(500)})
        .connect()
        .empty();
  };
  for (int attempt = 0; attempt < 3; ++attempt) {
    port_ = pick_free_port();
    std::vector<std::string> argv = {fencelockd_binary(), "--listen",
                                     "127.0.0.1:" + std::to_string(port_)};
    argv.insert(argv.end(), args.begin(), args.end());
    process_.start(argv, log_path_, env);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (auto code = process_.poll_exit()) {
        if (log().find("Address already in use") != std::string::npos) break;  // pick another port
        throw std::runtime_error("fencelockd exited with " + std::to_string(*code) + ":\n" + log());
      }
      if (healthy()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (process_.running()) {
      process_.kill();
      throw std::runtime_error("fencelockd did not answer /healthz within 10 s:\n" + log());
    }
  }
  throw std::runtime_error("fencelockd found no free port:\n" + log());
}

Fencelockd::~Fencelockd() {
  if (process_.running()) process_.stop(SIGTERM, std::chrono::seconds(5));
}

std::string Fencelockd::log() const {
  return read_file(log_path_);
}

bool Fencelockd::log_shows(const std::string& text, std::chrono::milliseconds limit) const {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (log().find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::optional<int> Fencelockd::stop(int signal, std::chrono::milliseconds limit) {
  return process_.stop(signal, limit);
}

FinishedRun run_fencelockd(const std::filesystem::path& dir, const std::vector<std::string>& args,
                           std::chrono::milliseconds limit) {
  const auto output = dir / "fencelockd-run.log";
  std::filesystem::remove(output);
  std::vector<std::string> argv = {fencelockd_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess process;
  process.start(argv, output);
  FinishedRun run;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto code = process.poll_exit()) {
      run.exit_code = *code;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  run.output = read_file(output);
  return run;
}

}  // namespace fencelock::testing
