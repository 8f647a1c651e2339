#include "client_tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <fstream>
#include <string>
#include <utility>

namespace fencelock {

namespace {

Error make(ErrorCode code, std::string message) {
  return Error{code, std::move(message), 0, std::nullopt};
}

Error tls_file_error(const char* option, const std::string& path, const std::string& why) {
  ERR_clear_error();
  return make(ErrorCode::kInvalidArgument, std::string(option) + " '" + path + "': " + why);
}

}  // namespace

Result<std::shared_ptr<boost::asio::ssl::context>> make_tls_context(const ClientOptions& options) {
  namespace ssl = boost::asio::ssl;
  if (options.cert_file.empty() != options.key_file.empty())
    return make(ErrorCode::kInvalidArgument, "cert_file and key_file: both or neither");
  for (const auto& [option, path] :
       {std::pair{"ca_file", &options.ca_file}, std::pair{"cert_file", &options.cert_file},
        std::pair{"key_file", &options.key_file}}) {
    if (!path->empty() && !std::ifstream(*path))
      return tls_file_error(option, *path, "cannot read");
  }
  std::shared_ptr<ssl::context> context;
  try {
    context = std::make_shared<ssl::context>(ssl::context::tls_client);
  } catch (const std::exception& e) {  // SSL_CTX_new failed: out of memory
    return make(ErrorCode::kInternal, std::string("cannot create a TLS context: ") + e.what());
  }
  SSL_CTX* handle = context->native_handle();
  SSL_CTX_set_min_proto_version(handle, TLS1_2_VERSION);
  SSL_CTX_set_default_passwd_cb(handle, [](char*, int, int, void*) { return 0; });
  context->set_verify_mode(ssl::verify_peer);
  boost::system::error_code ec;
  if (options.ca_file.empty()) {
    context->set_default_verify_paths(ec);
  } else {
    context->load_verify_file(options.ca_file, ec);
  }
  if (ec) {
    return tls_file_error("ca_file", options.ca_file,
                          "holds no CA certificate (PEM): " + ec.message());
  }
  if (!options.cert_file.empty()) {
    context->use_certificate_chain_file(options.cert_file, ec);
    if (ec) {
      return tls_file_error("cert_file", options.cert_file,
                            "cannot load the certificate (PEM): " + ec.message());
    }
    context->use_private_key_file(options.key_file, ssl::context::pem, ec);
    if (ec || SSL_CTX_check_private_key(handle) != 1) {
      return tls_file_error("key_file", options.key_file,
                            "cannot load the private key (PEM, unencrypted) or it does not match "
                            "cert_file");
    }
  }
  ERR_clear_error();
  return context;
}

}  // namespace fencelock
