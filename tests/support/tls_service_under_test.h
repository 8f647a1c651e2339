// A fencelock deployment serving HTTPS for a test: three real redis-servers, a SQLite token file,
// certificates made by the openssl CLI (test_certs.h) and the real fencelockd with --tls-cert and
// --tls-key (plus --tls-client-ca with the test CA when `mutual`, and `extra` flags), ready
// (/readyz 200 over TLS) when constructed, all stopped when destroyed. The certificate and key
// fencelockd reads are copies (live_cert, live_key), so a test can replace them and send SIGHUP.
#pragma once

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fencelockd_process.h"
#include "redis_cluster.h"
#include "service_under_test.h"
#include "temp_dir.h"
#include "test_certs.h"
#include "tls_client.h"

namespace fencelock::testing {

// Replaces `target` at once (a reader sees the old file or the new one, never half of one).
inline void replace_file(const std::filesystem::path& target, const std::filesystem::path& source) {
  const auto staging = target.string() + ".new";
  std::filesystem::copy_file(source, staging, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::rename(staging, target);
}

struct TlsServiceUnderTest {
  RedisCluster cluster{3};
  TempDir dir;
  TestCerts certs{dir.path()};
  std::filesystem::path live_cert = dir.path() / "live.pem";
  std::filesystem::path live_key = dir.path() / "live.key";
  std::optional<Fencelockd> daemon;

  explicit TlsServiceUnderTest(std::vector<std::string> extra = {}, bool mutual = false) {
    std::filesystem::copy_file(certs.server.cert, live_cert);
    std::filesystem::copy_file(certs.server.key, live_key);
    std::vector<std::string> args = {"--redis",    join_addresses(cluster.addresses()),
                                     "--tokens",   "sqlite:" + (dir.path() / "tokens.db").string(),
                                     "--tls-cert", live_cert.string(),
                                     "--tls-key",  live_key.string()};
    if (mutual) args.insert(args.end(), {"--tls-client-ca", certs.ca.string()});
    args.insert(args.end(), extra.begin(), extra.end());
    daemon.emplace(dir.path(), args);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (client(mutual).get("/readyz").status != 200) {
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("readyz never answered 200 over TLS:\n" + daemon->log());
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  // Serves `files` from now on: replaces the live key and certificate, then sends SIGHUP (the
  // caller waits for tls_reloaded or tls_reload_rejected in the log).
  void reload_with(const CertFiles& files) const {
    replace_file(live_key, files.key);
    replace_file(live_cert, files.cert);
    ::kill(daemon->pid(), SIGHUP);
  }
  std::uint16_t port() const { return daemon->port(); }
  std::string endpoint() const { return "https://127.0.0.1:" + std::to_string(daemon->port()); }
  // A client that trusts the test CA, with the client certificate when `with_client_cert`.
  TlsClientOptions trusting(bool with_client_cert = false) const {
    TlsClientOptions options;
    options.ca = certs.ca;
    if (with_client_cert) {
      options.cert = certs.client.cert;
      options.key = certs.client.key;
    }
    return options;
  }
  TlsClient client(bool with_client_cert = false) const {
    return TlsClient(daemon->port(), trusting(with_client_cert));
  }
};

}  // namespace fencelock::testing
