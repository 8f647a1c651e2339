#include "postgres_server.h"

#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <thread>
#include <vector>

#include "redis_server.h"

namespace fencelock::testing {

namespace {

constexpr auto kInitdbTimeout = std::chrono::seconds(60);
constexpr auto kReadyTimeout = std::chrono::seconds(30);
constexpr auto kStopTimeout = std::chrono::milliseconds(10'000);
constexpr int kStartAttempts = 5;  // a port picked free can be taken by a parallel test

std::string pg_bin() {
  const char* configured = std::getenv("FENCELOCK_PG_BIN");
  return configured != nullptr && *configured != '\0' ? configured : "/usr/lib/postgresql/15/bin";
}

bool running_as_root() {
  return ::geteuid() == 0;
}

// Under root, `argv` run as the postgres user; setpriv execs it, so the pid stays the program's.
std::vector<std::string> as_server_user(std::vector<std::string> argv) {
  if (!running_as_root()) return argv;
  std::vector<std::string> wrapped = {"setpriv", "--reuid=postgres", "--regid=postgres",
                                      "--init-groups"};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

void give_to_server_user(const std::filesystem::path& path) {
  if (!running_as_root()) return;
  const passwd* user = ::getpwnam("postgres");
  if (user == nullptr) throw std::runtime_error("no `postgres` user (install postgresql-15)");
  if (::chown(path.c_str(), user->pw_uid, user->pw_gid) != 0) {
    throw std::runtime_error("cannot chown " + path.string() + " to postgres");
  }
}

std::string percent_encoded(const std::string& text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (const char raw : text) {
    const auto c = static_cast<unsigned char>(raw);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace

PostgresServer::PostgresServer() : pg_dir_(dir_.path() / "pg") {
  // The postgres user must traverse the test's directory and own the server's.
  std::filesystem::permissions(
      dir_.path(), std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                       std::filesystem::perms::group_exec | std::filesystem::perms::others_read |
                       std::filesystem::perms::others_exec);
  std::filesystem::create_directories(pg_dir_);
  std::filesystem::permissions(pg_dir_, std::filesystem::perms::owner_all);
  give_to_server_user(pg_dir_);
  run_initdb();
  for (int attempt = 1;; ++attempt) {
    start_server();
    try {
      wait_ready();
      return;
    } catch (const std::runtime_error&) {
      const bool port_taken = log_tail().find("could not bind") != std::string::npos ||
                              log_tail().find("already in use") != std::string::npos;
      if (!port_taken || attempt == kStartAttempts) throw;
      port_ = 0;
    }
  }
}

PostgresServer::~PostgresServer() {
  stop();
}

void PostgresServer::stop() noexcept {
  try {
    // SIGINT is PostgreSQL's fast shutdown: it ends every session (SIGTERM's smart shutdown would
    // wait for them). SIGKILL after the bound.
    process_.stop(SIGINT, kStopTimeout);
  } catch (...) {  // a destructor never throws
    process_.kill();
  }
}

std::string PostgresServer::url() const {
  return "postgresql://fencelock@127.0.0.1:" + std::to_string(port_) + "/postgres";
}

std::string PostgresServer::url_with_options(const std::string& options) const {
  return url() + "?options=" + percent_encoded(options);
}

std::string PostgresServer::log_tail(std::size_t max_bytes) const {
  std::string text;
  for (const char* name : {"initdb.log", "postgres.log"}) {
    std::ifstream in(dir_.path() / name);
    text.append((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  return text.size() > max_bytes ? text.substr(text.size() - max_bytes) : text;
}

void PostgresServer::run_initdb() {
  ChildProcess initdb;
  initdb.start(as_server_user({pg_bin() + "/initdb", "-D", (pg_dir_ / "data").string(), "-A",
                               "trust", "-U", "fencelock", "--no-sync", "--no-instructions"}),
               dir_.path() / "initdb.log");
  const auto deadline = std::chrono::steady_clock::now() + kInitdbTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (const auto code = initdb.poll_exit()) {
      if (*code == 0) return;
      throw std::runtime_error("initdb exited with " + std::to_string(*code) + ":\n" + log_tail());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error("initdb did not finish within 60 s:\n" + log_tail());
}

void PostgresServer::start_server() {
  if (port_ == 0) port_ = pick_free_port();
  process_.start(
      as_server_user({pg_bin() + "/postgres", "-D", (pg_dir_ / "data").string(), "-p",
                      std::to_string(port_), "-k", pg_dir_.string(), "-c",
                      "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=64"}),
      dir_.path() / "postgres.log");
}

void PostgresServer::wait_ready() {
  const auto deadline = std::chrono::steady_clock::now() + kReadyTimeout;
  const std::string conninfo = url() + "?connect_timeout=2";
  while (std::chrono::steady_clock::now() < deadline) {
    if (process_.poll_exit()) {
      throw std::runtime_error("postgres on port " + std::to_string(port_) + " exited at start:\n" +
                               log_tail());
    }
    if (PQping(conninfo.c_str()) == PQPING_OK) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  stop();
  throw std::runtime_error("postgres on port " + std::to_string(port_) +
                           " did not accept connections within 30 s:\n" + log_tail());
}

PostgresServer& shared_postgres_server() {
  static PostgresServer server;
  return server;
}

void postgres_exec(const std::string& url, const std::string& sql) {
  PGconn* connection = PQconnectdb(url.c_str());
  const std::unique_ptr<PGconn, void (*)(PGconn*)> owner(connection, PQfinish);
  if (PQstatus(connection) != CONNECTION_OK) {
    throw std::runtime_error("cannot connect to " + url + ": " + PQerrorMessage(connection));
  }
  // Quiet: DROP TABLE IF EXISTS of a missing table would print a NOTICE on stderr.
  const std::string quiet = "SET client_min_messages = warning;" + sql;
  const std::unique_ptr<PGresult, void (*)(PGresult*)> result(PQexec(connection, quiet.c_str()),
                                                              PQclear);
  const auto status = PQresultStatus(result.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    throw std::runtime_error(sql + ": " + PQresultErrorMessage(result.get()));
  }
}

}  // namespace fencelock::testing
