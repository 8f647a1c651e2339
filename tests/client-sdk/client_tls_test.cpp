// The SDK and the CLI against fencelockd over TLS: the CA decides whom they trust, the server's
// certificate must name the host they asked for, a client certificate opens a server that wants
// one, and every TLS failure is kTls (CLI exit 7) with nothing sent.
#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>
#include <thread>

#include "build_paths.h"
#include "child_process.h"
#include "fencelock/client.h"
#include "redis_server.h"
#include "sync_redis.h"
#include "temp_dir.h"
#include "test_certs.h"
#include "tls_service_under_test.h"

using namespace fencelock::testing;
using namespace std::chrono_literals;
using fencelock::Client;
using fencelock::ClientOptions;
using fencelock::ErrorCode;
using nlohmann::json;

namespace {

ClientOptions options_for(const std::string& endpoint, const std::filesystem::path& ca) {
  ClientOptions options;
  options.endpoints = {endpoint};
  options.ca_file = ca.string();
  options.max_retries = 1;
  options.retry_backoff = 10ms;
  return options;
}

std::int64_t keys_on_nodes(TlsServiceUnderTest& s) {
  std::int64_t total = 0;
  for (std::size_t i = 0; i < s.cluster.size(); ++i)
    total += SyncRedis(s.cluster.node(i).port()).count_keys();
  return total;
}

struct CliRun {
  int exit_code = -1;
  std::string output;
};

CliRun cli(const std::filesystem::path& dir, const std::vector<std::string>& args,
           const std::vector<std::string>& env = {}) {
  static int run = 0;
  const auto out = dir / ("cli-tls-" + std::to_string(++run) + ".out");
  std::vector<std::string> argv = {cli_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess process;
  process.start(argv, out, env);
  CliRun result;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto code = process.poll_exit()) {
      result.exit_code = *code;
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  std::ifstream in(out);
  result.output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return result;
}

}  // namespace

TEST_CASE("sdk: over https, trusting the CA, the SDK takes and releases locks — by IP or localhost",
          "[client][redis]") {
  TlsServiceUnderTest s;
  const std::string endpoint =
      GENERATE(as<std::string>{}, "https://127.0.0.1:", "https://localhost:");
  auto client = Client::create(options_for(endpoint + std::to_string(s.port()), s.certs.ca));
  REQUIRE(client.ok());
  auto lease = client->acquire("sdk-tls", 10s);
  REQUIRE(lease.ok());
  CHECK(client->extend(lease.value(), 10s).ok());
  CHECK(client->status("sdk-tls")->held);
  CHECK(client->release(lease.value()).value());
  CHECK(client->next_token("sdk-tls").value() == lease->token() + 1);
}

TEST_CASE("sdk: a server the SDK does not trust is a kTls error and nothing changes anywhere",
          "[client][redis]") {
  TlsServiceUnderTest s;
  SECTION("a CA that did not sign the server's certificate") {
    auto client = Client::create(options_for(s.endpoint(), s.certs.wrong_ca));
    REQUIRE(client.ok());
    const auto refused = client->acquire("sdk-tls", 10s);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::kTls);
    CHECK_THAT(refused.error().message, Catch::Contains("certificate verify failed"));
    CHECK(client->next_token("sdk-tls").error().code == ErrorCode::kTls);
  }
  SECTION("a certificate for another host") {
    const CertFiles elsewhere =
        s.certs.issue_server("elsewhere", "fencelock.invalid", 0x3003, false);
    s.reload_with(elsewhere);
    REQUIRE(s.daemon->log_shows("tls_reloaded"));
    for (const std::string host : {"127.0.0.1", "localhost"}) {
      auto client = Client::create(
          options_for("https://" + host + ":" + std::to_string(s.port()), s.certs.ca));
      const auto refused = client->acquire("sdk-tls", 10s);
      REQUIRE_FALSE(refused.ok());
      CHECK(refused.error().code == ErrorCode::kTls);
      CHECK_THAT(refused.error().message, Catch::Contains("mismatch"));
    }
  }
  CHECK(keys_on_nodes(s) == 0);
  TlsClient unchecked(s.port());  // trusts any certificate: the one in force may name elsewhere
  CHECK(unchecked.get("/v1/tokens/sdk-tls").json()["token"] == 0);
}

TEST_CASE(
    "sdk: a certificate that names the host only in its CN, with no subjectAltName, is refused",
    "[client][redis]") {
  TlsServiceUnderTest s;
  const CertFiles cn_only = s.certs.issue_cn_only("cn-only", "localhost", 0x3004);
  s.reload_with(cn_only);
  REQUIRE(s.daemon->log_shows("tls_reloaded"));
  auto client =
      Client::create(options_for("https://localhost:" + std::to_string(s.port()), s.certs.ca));
  REQUIRE(client.ok());
  const auto refused = client->acquire("sdk-tls-cn", 10s);  // was granted: OpenSSL's CN fallback
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::kTls);
  CHECK_THAT(refused.error().message, Catch::Contains("hostname mismatch"));
  CHECK(keys_on_nodes(s) == 0);
}

TEST_CASE("sdk, cli: http:// to fencelockd's TLS port is refused with a hint to use https://",
          "[client][redis]") {
  TlsServiceUnderTest s;
  const std::string plain = "http://127.0.0.1:" + std::to_string(s.port());
  ClientOptions options;
  options.endpoints = {plain};
  options.max_retries = 2;
  auto client = Client::create(options);
  REQUIRE(client.ok());
  const auto refused = client->acquire("sdk-plain", 10s);
  REQUIRE_FALSE(refused.ok());
  // Was kTransport, "reading the answer failed: end of stream".
  CHECK(refused.error().code == ErrorCode::kInvalidArgument);
  CHECK(refused.error().http_status == 400);
  CHECK_THAT(refused.error().message, Catch::Contains("use https://"));
  // DELETE is not one OpenSSL takes for HTTP: the server closes without a word, and the SDK
  // says what that may mean.
  const fencelock::Lease lease("sdk-plain", "1.0123456789abcdef", 1, 10s,
                               fencelock::Lease::Clock::now());
  const auto released = client->release(lease);
  REQUIRE_FALSE(released.ok());
  CHECK(released.error().code == ErrorCode::kTransport);
  CHECK_THAT(released.error().message, Catch::Contains("is it TLS-only? use https://"));
  const CliRun run = cli(s.dir.path(), {"--endpoint", plain, "status", "sdk-plain"});
  CHECK(run.exit_code == 2);  // was 5, "unavailable"
  CHECK_THAT(run.output, Catch::Contains("use https://"));
  CHECK(keys_on_nodes(s) == 0);
}

TEST_CASE("sdk: with mutual TLS the client certificate opens the door, and only one from the CA",
          "[client][redis]") {
  TlsServiceUnderTest s({}, true);
  ClientOptions options = options_for(s.endpoint(), s.certs.ca);
  SECTION("with a certificate from the CA") {
    options.cert_file = s.certs.client.cert.string();
    options.key_file = s.certs.client.key.string();
    auto client = Client::create(options);
    REQUIRE(client.ok());
    auto lease = client->acquire("sdk-mtls", 10s);
    REQUIRE(lease.ok());
    CHECK(client->release(lease.value()).value());
  }
  SECTION("without a certificate, or with one from another CA") {
    if (GENERATE(false, true)) {
      options.cert_file = s.certs.wrong_client.cert.string();
      options.key_file = s.certs.wrong_client.key.string();
    }
    auto client = Client::create(options);
    REQUIRE(client.ok());
    const auto refused = client->acquire("sdk-mtls", 10s);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::kTls);
    CHECK(keys_on_nodes(s) == 0);
  }
}

TEST_CASE("sdk: TLS files that cannot be used are refused when the client is created", "[client]") {
  TempDir dir;
  const TestCerts certs(dir.path());
  const auto not_pem = dir.path() / "not.pem";
  std::ofstream(not_pem) << "hello\n";
  ClientOptions options = options_for("https://127.0.0.1:9", certs.ca);
  std::string expected;
  SECTION("a CA file that is not there") {
    options.ca_file = (dir.path() / "missing.pem").string();
    expected = "ca_file '" + options.ca_file + "': cannot read";
  }
  SECTION("a CA file without a certificate") {
    options.ca_file = not_pem.string();
    expected = "ca_file '" + options.ca_file + "': holds no CA certificate";
  }
  SECTION("a certificate without its key") {
    options.cert_file = certs.client.cert.string();
    expected = "cert_file and key_file: both or neither";
  }
  SECTION("a key that is not the certificate's") {
    options.cert_file = certs.client.cert.string();
    options.key_file = certs.server.key.string();
    expected = "key_file '" + options.key_file + "'";
  }
  const auto created = Client::create(options);
  REQUIRE_FALSE(created.ok());
  CHECK(created.error().code == ErrorCode::kInvalidArgument);
  CHECK_THAT(created.error().message, Catch::Contains(expected));
}

TEST_CASE("sdk: TLS files with an http:// endpoint are refused when the client is created",
          "[client]") {
  TempDir dir;
  const TestCerts certs(dir.path());
  ClientOptions options;
  options.endpoints = {"http://127.0.0.1:9"};
  SECTION("ca_file") {
    options.ca_file = certs.ca.string();
  }
  SECTION("cert_file and key_file") {
    options.cert_file = certs.client.cert.string();
    options.key_file = certs.client.key.string();
  }
  SECTION("ca_file, and one https:// endpoint besides the http:// one") {
    options.ca_file = certs.ca.string();
    options.endpoints = {"https://127.0.0.1:8", "http://127.0.0.1:9"};
  }
  const auto created = Client::create(options);  // was: ok, and the API key went in clear
  REQUIRE_FALSE(created.ok());
  CHECK(created.error().code == ErrorCode::kInvalidArgument);
  CHECK_THAT(created.error().message,
             Catch::Contains("are for https:// endpoints: 'http://127.0.0.1:9' is plain HTTP"));
  options.ca_file.clear();
  options.cert_file.clear();
  options.key_file.clear();
  CHECK(Client::create(options).ok());  // without TLS files, http:// is still allowed
}

TEST_CASE("cli: acquire over https with --cacert works — a CA that did not sign the server exits 7",
          "[client][redis]") {
  TlsServiceUnderTest s;
  const std::vector<std::string> env = {"FENCELOCK_ENDPOINT=" + s.endpoint()};
  const CliRun granted =
      cli(s.dir.path(), {"--cacert", s.certs.ca.string(), "acquire", "cli-tls"}, env);
  CHECK(granted.exit_code == 0);
  const json lease =
      json::parse(granted.output.substr(0, granted.output.find('\n')), nullptr, false);
  CHECK(lease.value("token", 0) == 1);

  std::vector<std::string> from_env = env;
  from_env.push_back("FENCELOCK_CACERT=" + s.certs.ca.string());
  CHECK(cli(s.dir.path(), {"status", "cli-tls"}, from_env).exit_code == 0);

  const CliRun refused =
      cli(s.dir.path(), {"--cacert", s.certs.wrong_ca.string(), "acquire", "cli-tls-2"}, env);
  CHECK(refused.exit_code == 7);
  CHECK_THAT(refused.output, Catch::Contains("certificate verify failed"));
  CHECK(keys_on_nodes(s) == 3);  // cli-tls on each of the three nodes; nothing from the refusal
}

TEST_CASE(
    "sdk: a TLS failure is not retried on the same endpoint, and a later attempt's connection "
    "failure does not hide it",
    "[client][redis]") {
  TlsServiceUnderTest s;
  TlsClient unchecked(s.port());  // trusts any certificate: reads the server's counters
  auto failures = [&] {
    const std::string text = unchecked.get("/metrics").body;
    const std::string name = "fencelock_tls_handshake_failures_total ";
    const auto at = text.find("\n" + name);
    REQUIRE(at != std::string::npos);
    return std::stod(text.substr(at + 1 + name.size()));
  };
  ClientOptions options = options_for(s.endpoint(), s.certs.wrong_ca);  // trusts another CA
  options.retry_backoff = 300ms;
  SECTION("one endpoint: one handshake, no backoff") {
    options.max_retries = 3;
    auto client = Client::create(options);
    REQUIRE(client.ok());
    const double before = failures();
    const auto started = std::chrono::steady_clock::now();
    const auto refused = client->status("sdk-tls-retry");
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::kTls);
    CHECK(std::chrono::steady_clock::now() - started < 300ms);
    std::this_thread::sleep_for(100ms);
    CHECK(failures() == before + 1);  // was 4: every retry another failed handshake
  }
  SECTION("then an endpoint that refuses connections: still kTls") {
    options.endpoints.push_back("https://127.0.0.1:" + std::to_string(pick_free_port()));
    options.max_retries = 1;
    auto client = Client::create(options);
    REQUIRE(client.ok());
    const auto refused = client->status("sdk-tls-retry");
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::kTls);  // was kTransport, the second attempt's
    CHECK_THAT(refused.error().message, Catch::Contains("certificate verify failed"));
  }
}

TEST_CASE("sdk: an https endpoint by DNS name is checked against the certificate's DNS name",
          "[client][redis]") {
  TlsServiceUnderTest s;
  // A certificate from the test CA that names only the DNS name localhost: no IP address.
  const auto dir = s.dir.path();
  {
    std::ofstream extensions(dir / "dns-only.ext");
    extensions << "[dns_only]\nbasicConstraints = CA:FALSE\nkeyUsage = digitalSignature\n"
                  "extendedKeyUsage = serverAuth\nsubjectAltName = DNS:localhost\n";
  }
  const CertFiles dns_only{dir / "dns-only.pem", dir / "dns-only.key"};
  run_openssl(dir, {"req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", dns_only.key.string(), "-out",
                    (dir / "dns-only.csr").string(), "-subj", "/CN=dns only"});
  run_openssl(dir,
              {"x509", "-req", "-in", (dir / "dns-only.csr").string(), "-CA", s.certs.ca.string(),
               "-CAkey", (s.certs.ca.parent_path() / "ca.key").string(), "-set_serial", "12293",
               "-days", "2", "-extfile", (dir / "dns-only.ext").string(), "-extensions", "dns_only",
               "-out", dns_only.cert.string()});
  s.reload_with(dns_only);
  REQUIRE(s.daemon->log_shows("tls_reloaded"));

  auto by_name =
      Client::create(options_for("https://localhost:" + std::to_string(s.port()), s.certs.ca));
  REQUIRE(by_name.ok());
  auto lease = by_name->acquire("by-name", 10s);  // resolved, SNI localhost, DNS SAN checked
  REQUIRE(lease.ok());
  CHECK(by_name->release(lease.value()).value());

  auto by_address =
      Client::create(options_for("https://127.0.0.1:" + std::to_string(s.port()), s.certs.ca));
  const auto refused = by_address->status("by-name");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::kTls);  // the certificate names no IP address
  CHECK_THAT(refused.error().message, Catch::Contains("mismatch"));
}
