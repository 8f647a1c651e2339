// install-consumer: a program built outside the tree against the *installed* SDK
// (scripts/test-install.sh builds it with find_package(fencelock) and with pkg-config).
//
//   install-consumer refused ENDPOINT   the endpoint has no listener: acquire fails with kTransport
//   install-consumer live ENDPOINT      a running fencelockd: acquire, check the token, release
//
// Exits 0 when the SDK behaved as expected, 1 otherwise, printing what happened.
#include <fencelock/client.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>

namespace {

int expect_refused(fencelock::Client& client) {
  auto lease = client.acquire("install-check", std::chrono::seconds(5));
  if (lease) {
    std::fprintf(stderr, "install-consumer: acquire succeeded against a closed port\n");
    return 1;
  }
  if (lease.error().code != fencelock::ErrorCode::kTransport) {
    std::fprintf(stderr, "install-consumer: expected a transport error, got %s: %s\n",
                 std::string(fencelock::error_code_name(lease.error().code)).c_str(),
                 lease.error().message.c_str());
    return 1;
  }
  std::printf("install-consumer: refused as expected (%s)\n", lease.error().message.c_str());
  return 0;
}

int expect_live(fencelock::Client& client) {
  auto lease = client.acquire("install-check", std::chrono::seconds(5), std::chrono::seconds(2));
  if (!lease) {
    std::fprintf(stderr, "install-consumer: acquire failed: %s\n", lease.error().message.c_str());
    return 1;
  }
  const auto token = lease.value().token();
  auto released = client.release(lease.value());
  if (token == 0 || !released || !released.value()) {
    std::fprintf(stderr, "install-consumer: token %llu, release %s\n",
                 static_cast<unsigned long long>(token),
                 released ? "answered false" : released.error().message.c_str());
    return 1;
  }
  std::printf("install-consumer: acquired and released, token %llu\n",
              static_cast<unsigned long long>(token));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: install-consumer refused|live ENDPOINT\n");
    return 2;
  }
  const std::string_view mode = argv[1];
  fencelock::ClientOptions options;
  options.endpoints = {argv[2]};
  options.connect_timeout = std::chrono::milliseconds(500);
  options.max_retries = 0;
  auto client = fencelock::Client::create(options);
  if (!client) {
    std::fprintf(stderr, "install-consumer: %s\n", client.error().message.c_str());
    return 1;
  }
  return mode == "live" ? expect_live(client.value()) : expect_refused(client.value());
}
