// Certificates for TLS tests, made at test time by the openssl CLI into a directory the test owns:
// a CA, a server certificate for localhost and 127.0.0.1 (both as subjectAltNames) signed by it, a
// client certificate signed by it, and a second, unrelated CA with a client certificate of its
// own. Keys are EC P-256 (fast to make), unencrypted, valid for two days.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace fencelock::testing {

struct CertFiles {
  std::filesystem::path cert;  // PEM
  std::filesystem::path key;   // PEM, unencrypted
};

class TestCerts {
 public:
  // Serial numbers of the server and client certificates made by the constructor.
  static constexpr long kServerSerial = 0x1001;
  static constexpr long kClientSerial = 0x1002;

  // Makes every file under `dir` (which must exist). Throws std::runtime_error with openssl's
  // output if a command fails or takes more than 30 s.
  explicit TestCerts(const std::filesystem::path& dir);

  std::filesystem::path ca;        // the CA's certificate: what a client trusts
  CertFiles server;                // CN=localhost, serial kServerSerial, signed by `ca`
  CertFiles client;                // CN=fencelock test client, serial kClientSerial, by `ca`
  std::filesystem::path wrong_ca;  // another CA, trusted by nobody
  CertFiles wrong_client;          // a client certificate signed by `wrong_ca`

  // Another server certificate from `ca`, with `common_name` and `serial`, written to
  // `<stem>.pem` and `<stem>.key` in the directory. Its names: localhost and 127.0.0.1, or (not
  // `for_localhost`) only fencelock.invalid and 192.0.2.1. Valid from now for `days`; a negative
  // `days` makes one that expired that many days ago (notBefore now, notAfter before it).
  CertFiles issue_server(const std::string& stem, const std::string& common_name, long serial,
                         bool for_localhost = true, int days = 2) const;
  // A server certificate from `ca` with no subjectAltName: its only name is CN=`common_name`.
  // Written like issue_server's, valid for two days.
  CertFiles issue_cn_only(const std::string& stem, const std::string& common_name,
                          long serial) const;

 private:
  CertFiles issue(const std::string& stem, const std::string& common_name, long serial,
                  const std::filesystem::path& ca_cert, const std::filesystem::path& ca_key,
                  const std::string& extensions, int days = 2) const;

  std::filesystem::path dir_;
  std::filesystem::path config_;
  std::filesystem::path ca_key_;
  std::filesystem::path wrong_ca_key_;
};

// Runs the openssl CLI with `args` to completion (30 s at most); its output, or throws
// std::runtime_error with it if it fails. `dir` holds the output file while it runs.
std::string run_openssl(const std::filesystem::path& dir, const std::vector<std::string>& args);

}  // namespace fencelock::testing
