// The parts of the client's setup that need no connection: the options read from the environment
// and fresh request ids (client.h).
#include <openssl/rand.h>

#include <cstdlib>
#include <string>

#include "fencelock/client.h"

namespace fencelock {

std::string new_request_id() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return {};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (const unsigned char b : bytes) {
    id.push_back(kHex[b >> 4]);
    id.push_back(kHex[b & 0x0f]);
  }
  return id;
}

ClientOptions ClientOptions::from_environment() {
  ClientOptions options;
  const auto read = [](const char* name) {
    const char* value = std::getenv(name);
    return std::string(value == nullptr ? "" : value);
  };
  if (const std::string endpoints = read("FENCELOCK_ENDPOINT"); !endpoints.empty()) {
    options.endpoints.clear();
    std::size_t start = 0;
    for (;;) {
      const std::size_t comma = endpoints.find(',', start);
      options.endpoints.push_back(endpoints.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  options.api_key = read("FENCELOCK_API_KEY");
  options.ca_file = read("FENCELOCK_CACERT");
  options.cert_file = read("FENCELOCK_CERT");
  options.key_file = read("FENCELOCK_KEY");
  return options;
}

}  // namespace fencelock
