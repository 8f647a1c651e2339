#include "auth/api_secret.h"

#include <openssl/evp.h>

#include <array>

#include "fencelock/random_hex.h"

namespace fencelock::service {

ServiceResult<std::string> generate_api_secret() {
  auto hex = fencelock::random_hex(32);
  if (!hex.ok()) return service_error(std::move(hex).error().message);
  return std::string(kApiSecretPrefix) + hex.value();
}

std::string sha256_hex(std::string_view text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_Digest(text.data(), text.size(), digest.data(), &length, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(std::size_t{2} * length);
  for (unsigned int i = 0; i < length; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0x0f]);
  }
  return out;
}

}  // namespace fencelock::service
