// The parts of the client's setup that need no connection: the options read from the environment
// and fresh request ids (client.h).
#include <cstdlib>
#include <string>

#include "fencelock/client.h"
#include "fencelock/random_hex.h"

namespace fencelock {

std::string new_request_id() {
  auto id = random_hex(16);
  return id.ok() ? std::move(id).value() : std::string();
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
