#include "test_certs.h"

#include <chrono>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "child_process.h"

namespace fencelock::testing {

namespace {

// Sections for the CA, the server and the client certificates; subjects come from -subj.
constexpr const char* kConfig = R"([req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[v3_ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost,IP:127.0.0.1
[elsewhere]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:fencelock.invalid,IP:192.0.2.1
[cn_only]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
[client]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
)";

const std::vector<std::string> kNewEcKey = {"-newkey", "ec", "-pkeyopt",
                                            "ec_paramgen_curve:prime256v1", "-nodes"};

}  // namespace

std::string run_openssl(const std::filesystem::path& dir, const std::vector<std::string>& args) {
  static int run = 0;
  const auto output = dir / ("openssl-" + std::to_string(++run) + ".log");
  std::vector<std::string> argv = {"openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess process;
  process.start(argv, output);
  std::optional<int> code;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!(code = process.poll_exit()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::ifstream in(output);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(output);
  if (code != 0) {
    std::string command;
    for (const auto& a : argv) command += a + " ";
    throw std::runtime_error("failed: " + command + "\n" + text);
  }
  return text;
}

TestCerts::TestCerts(const std::filesystem::path& dir)
    : dir_(dir),
      config_(dir / "openssl.cnf"),
      ca_key_(dir / "ca.key"),
      wrong_ca_key_(dir / "wrong-ca.key") {
  std::ofstream(config_) << kConfig;
  ca = dir / "ca.pem";
  wrong_ca = dir / "wrong-ca.pem";
  for (const auto& [cert, key, name] : {std::tuple{&ca, &ca_key_, "fencelock test CA"},
                                        std::tuple{&wrong_ca, &wrong_ca_key_, "some other CA"}}) {
    std::vector<std::string> args = {"req",         "-x509", "-config", config_.string(),
                                     "-extensions", "v3_ca"};
    args.insert(args.end(), kNewEcKey.begin(), kNewEcKey.end());
    args.insert(args.end(), {"-keyout", key->string(), "-out", cert->string(), "-subj",
                             std::string("/CN=") + name, "-days", "2", "-set_serial", "1"});
    run_openssl(dir_, args);
  }
  server = issue("server", "localhost", kServerSerial, ca, ca_key_, "server");
  client = issue("client", "fencelock test client", kClientSerial, ca, ca_key_, "client");
  wrong_client = issue("wrong-client", "fencelock test client", kClientSerial, wrong_ca,
                       wrong_ca_key_, "client");
}

CertFiles TestCerts::issue_server(const std::string& stem, const std::string& common_name,
                                  long serial, bool for_localhost, int days) const {
  return issue(stem, common_name, serial, ca, ca_key_, for_localhost ? "server" : "elsewhere",
               days);
}

CertFiles TestCerts::issue_cn_only(const std::string& stem, const std::string& common_name,
                                   long serial) const {
  return issue(stem, common_name, serial, ca, ca_key_, "cn_only");
}

CertFiles TestCerts::issue(const std::string& stem, const std::string& common_name, long serial,
                           const std::filesystem::path& ca_cert,
                           const std::filesystem::path& ca_key, const std::string& extensions,
                           int days) const {
  const CertFiles files{dir_ / (stem + ".pem"), dir_ / (stem + ".key")};
  const auto request = dir_ / (stem + ".csr");
  std::vector<std::string> args = {"req", "-new", "-config", config_.string()};
  args.insert(args.end(), kNewEcKey.begin(), kNewEcKey.end());
  args.insert(args.end(), {"-keyout", files.key.string(), "-out", request.string(), "-subj",
                           "/CN=" + common_name});
  run_openssl(dir_, args);
  run_openssl(
      dir_, {"x509", "-req", "-in", request.string(), "-CA", ca_cert.string(), "-CAkey",
             ca_key.string(), "-set_serial", std::to_string(serial), "-days", std::to_string(days),
             "-extfile", config_.string(), "-extensions", extensions, "-out", files.cert.string()});
  std::filesystem::remove(request);
  return files;
}

}  // namespace fencelock::testing
