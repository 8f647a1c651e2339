// The listener's TLS settings: its certificate, private key and, for mutual TLS, the CAs that sign
// client certificates, loaded from PEM files into an OpenSSL context with fencelock's protocol
// rules — and the context in force, swapped on SIGHUP without a restart.
//
// Rules of every context (docs/operations.md, "Securing fencelock"): TLS 1.2 and 1.3 only; for
// TLS 1.2 only ECDHE key exchange with AEAD ciphers (OpenSSL's TLS 1.3 suites as they are); no
// compression; no renegotiation. With a client CA, a client must present a certificate it signed,
// or the handshake fails.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include "base/service_result.h"

namespace fencelock::service {

struct TlsFiles {
  std::filesystem::path cert;       // PEM: the server's certificate, then its intermediates
  std::filesystem::path key;        // PEM: its private key, unencrypted
  std::filesystem::path client_ca;  // PEM: CAs for client certificates; empty: no mTLS
};

// The TLS 1.2 cipher list (TLS 1.3 suites are OpenSSL's defaults).
inline constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

struct LoadedTls {
  std::shared_ptr<boost::asio::ssl::context> context;
  // For the log: "subject=\"CN=…\" serial=1A2B not_after=\"…\"" (no key material).
  std::string description;
  // "" while the certificate is within its validity window, else why not ("expired on …", "not
  // valid before …"): clients refuse it. A warning at start; a reload refuses it.
  std::string invalid_now;
};

// Reads `files` into a new server context. Errors: a ServiceError whose message names the flag
// and the file and gives OpenSSL's reason: a file that cannot be read or holds no PEM certificate
// or key, an encrypted key, a key that does not match the certificate, a client CA file with no
// certificate. Blocking file I/O: at startup or on the reload thread, never on the event loop.
ServiceResult<LoadedTls> load_tls(const TlsFiles& files);

// The context new connections use. Thread-safe: current() from any thread, reload() from another.
class TlsContext {
 public:
  TlsContext(TlsFiles files, LoadedTls loaded);

  // The context in force; a connection keeps the one it began with for its whole life.
  std::shared_ptr<boost::asio::ssl::context> current() const;

  // Reads the files again (blocking): a good set replaces the context for new connections and logs
  // tls_reloaded; a bad one — or a certificate expired or not yet valid, which every client would
  // refuse — keeps the context in force and logs tls_reload_rejected with the reason. Never
  // throws.
  void reload();

  const TlsFiles& files() const noexcept { return files_; }

 private:
  const TlsFiles files_;
  mutable std::mutex mutex_;  // guards current_ (the pointer)
  std::shared_ptr<boost::asio::ssl::context> current_;
};

}  // namespace fencelock::service
