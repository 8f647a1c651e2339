// Loading checks what OpenSSL would otherwise only discover at the first handshake: that each file
// is readable and holds PEM, and that the key belongs to the certificate. The files are opened
// once by us (for a clear "cannot read" with the system's reason) and then handed to OpenSSL,
// whose reason ("no start line", "bad decrypt", ...) completes any other message.
//
// An encrypted key would make OpenSSL ask for a passphrase on the terminal; a password callback
// that gives none turns that into an error instead.
#include "http/tls_context.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <fstream>

#include "ops/log.h"

namespace fencelock::service {

namespace ssl = boost::asio::ssl;

namespace {

ServiceError invalid(std::string message) {
  ERR_clear_error();  // the queue is per thread: leave nothing for the next TLS call to misread
  return service_error(std::move(message));
}

std::string quoted(const std::filesystem::path& path) {
  return "'" + path.string() + "'";
}

// "" if `path` can be opened for reading, else the system's reason.
std::string unreadable(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (in) return {};
  return std::strerror(errno);
}

// OpenSSL's reason for a failed call: the asio error's text, else the oldest queued error.
std::string openssl_reason(const boost::system::error_code& ec) {
  if (ec) return ec.message();
  const unsigned long code = ERR_peek_error();
  const char* reason = code != 0 ? ERR_reason_error_string(code) : nullptr;
  return reason != nullptr ? reason : "unknown OpenSSL error";
}

struct BioFree {
  void operator()(BIO* bio) const noexcept { BIO_free(bio); }
};
struct BnFree {
  void operator()(BIGNUM* bn) const noexcept { BN_free(bn); }
};

std::string bio_text(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return size > 0 ? std::string(data, static_cast<std::size_t>(size)) : std::string();
}

std::string describe_certificate(X509* cert) {
  if (cert == nullptr) return "subject=?";
  std::string out;
  const std::unique_ptr<BIO, BioFree> subject(BIO_new(BIO_s_mem()));
  if (subject &&
      X509_NAME_print_ex(subject.get(), X509_get_subject_name(cert), 0, XN_FLAG_RFC2253) >= 0) {
    out += "subject=\"" + bio_text(subject.get()) + "\"";
  }
  const std::unique_ptr<BIGNUM, BnFree> serial(
      ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr));
  if (serial) {
    char* hex = BN_bn2hex(serial.get());
    if (hex != nullptr) {
      out += std::string(" serial=") + hex;
      OPENSSL_free(hex);
    }
  }
  const std::unique_ptr<BIO, BioFree> until(BIO_new(BIO_s_mem()));
  if (until && ASN1_TIME_print(until.get(), X509_get0_notAfter(cert)) == 1) {
    out += " not_after=\"" + bio_text(until.get()) + "\"";
  }
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) < 0) out += " expired=true";
  if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0) out += " not_yet_valid=true";
  return out;
}

std::string asn1_time(const ASN1_TIME* time) {
  const std::unique_ptr<BIO, BioFree> text(BIO_new(BIO_s_mem()));
  if (!text || ASN1_TIME_print(text.get(), time) != 1) return "?";
  return bio_text(text.get());
}

// "" if `cert` is valid now, else why not (clients would refuse it).
std::string invalid_now(X509* cert) {
  if (cert == nullptr) return "no certificate";
  // X509_cmp_current_time: 0 is an error (a malformed time), which no client accepts either.
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0)
    return "the certificate expired on " + asn1_time(X509_get0_notAfter(cert));
  if (X509_cmp_current_time(X509_get0_notBefore(cert)) >= 0)
    return "the certificate is not valid before " + asn1_time(X509_get0_notBefore(cert));
  return {};
}

int no_passphrase(char*, int, int, void*) {
  return 0;
}

ServiceResult<LoadedTls> load(const TlsFiles& files) {
  for (const auto& [flag, path] :
       {std::pair{"--tls-cert", &files.cert}, std::pair{"--tls-key", &files.key},
        std::pair{"--tls-client-ca", &files.client_ca}}) {
    if (path->empty()) continue;
    if (const std::string why = unreadable(*path); !why.empty())
      return invalid(std::string(flag) + " " + quoted(*path) + ": cannot read: " + why);
  }
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* handle = context->native_handle();
  ERR_clear_error();
  SSL_CTX_set_default_passwd_cb(handle, no_passphrase);
  if (SSL_CTX_set_min_proto_version(handle, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(handle, kTls12Ciphers) != 1) {
    return invalid("TLS settings refused by OpenSSL: " + openssl_reason({}));
  }
  SSL_CTX_set_options(
      handle, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // Resumed sessions must be checked against the same client-certificate rule.
  static constexpr unsigned char kSessionContext[] = "fencelockd";
  SSL_CTX_set_session_id_context(handle, kSessionContext, sizeof kSessionContext - 1);

  boost::system::error_code ec;
  context->use_certificate_chain_file(files.cert.string(), ec);
  if (ec) {
    return invalid("--tls-cert " + quoted(files.cert) +
                   ": cannot load the certificate (PEM): " + openssl_reason(ec));
  }
  context->use_private_key_file(files.key.string(), ssl::context::pem, ec);
  // OpenSSL 3 checks the key against the certificate as it loads it; a key of another type is
  // caught by the check after.
  const bool mismatch =
      ec && ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH;
  if (ec && !mismatch) {
    return invalid("--tls-key " + quoted(files.key) +
                   ": cannot load the private key (PEM, unencrypted): " + openssl_reason(ec));
  }
  if (mismatch || SSL_CTX_check_private_key(handle) != 1) {
    return invalid("--tls-key " + quoted(files.key) +
                   " does not match the certificate in --tls-cert " + quoted(files.cert) + ": " +
                   openssl_reason({}));
  }
  if (!files.client_ca.empty()) {
    context->load_verify_file(files.client_ca.string(), ec);
    STACK_OF(X509_NAME)* names = ec ? nullptr : SSL_load_client_CA_file(files.client_ca.c_str());
    if (names == nullptr) {
      return invalid("--tls-client-ca " + quoted(files.client_ca) +
                     ": holds no CA certificate (PEM): " + openssl_reason(ec));
    }
    SSL_CTX_set_client_CA_list(handle, names);  // takes ownership: advertised to clients
    context->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  }
  X509* cert = SSL_CTX_get0_certificate(handle);
  LoadedTls loaded{std::move(context), describe_certificate(cert), invalid_now(cert)};
  ERR_clear_error();
  return loaded;
}

}  // namespace

ServiceResult<LoadedTls> load_tls(const TlsFiles& files) {
  try {
    return load(files);
  } catch (const std::exception& e) {  // SSL_CTX_new failed: out of memory
    return invalid(std::string("cannot create a TLS context: ") + e.what());
  }
}

TlsContext::TlsContext(TlsFiles files, LoadedTls loaded)
    : files_(std::move(files)), current_(std::move(loaded.context)) {}

std::shared_ptr<ssl::context> TlsContext::current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_;
}

void TlsContext::reload() {
  auto loaded = load_tls(files_);
  if (!loaded.ok()) {
    log_event(LogLevel::kError, "tls_reload_rejected",
              "reason=\"" + loaded.error().message +
                  "\" (the certificate in force stays for new connections)");
    return;
  }
  if (!loaded->invalid_now.empty()) {  // every new client would fail: keep the one in force
    log_event(LogLevel::kError, "tls_reload_rejected",
              "reason=\"--tls-cert " + quoted(files_.cert) + ": " + loaded->invalid_now + "\" " +
                  loaded->description + " (the certificate in force stays for new connections)");
    return;
  }
  log_event(LogLevel::kInfo, "tls_reloaded",
            "cert=" + files_.cert.string() + " " + loaded->description);
  std::shared_ptr<ssl::context> previous = std::move(loaded->context);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    current_.swap(previous);
  }
  // `previous` goes here, outside the lock, or later with the last connection that uses it.
}

}  // namespace fencelock::service
