// One real PostgreSQL 15 server owned by a test: initdb into a private directory, the server run
// in the foreground as the test's child process on a free loopback port, and always stopped —
// fast shutdown (SIGINT: disconnects every session), SIGKILL if it has not exited within 10 s —
// when the PostgresServer is destroyed, also when the test fails or throws.
//
// PostgreSQL refuses to run as root, so under root initdb and the server run as the `postgres`
// user (setpriv --reuid/--regid, which execs the server itself: the child pid IS the postmaster)
// and the directory is handed to that user. A user change clears the kernel's parent-death
// signal, so a server can outlive a test process that crashes: its data directory is named
// fencelock-test-*/pg, and scripts/test.sh kills what `pgrep -f 'postgres .*fencelock-test-'`
// finds. Binaries from $FENCELOCK_PG_BIN, else /usr/lib/postgresql/15/bin.
//
// Not thread-safe: drive one PostgresServer from one thread. Connections to it may be used from
// any thread (each its own).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

#include "child_process.h"
#include "temp_dir.h"

namespace fencelock::testing {

class PostgresServer {
 public:
  // initdb (trust authentication, superuser "fencelock") and starts the server, waiting until it
  // accepts connections (bounded). Throws std::runtime_error with the log tail on failure.
  PostgresServer();
  ~PostgresServer();  // stops the server; never throws
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  // postgresql://fencelock@127.0.0.1:<port>/postgres
  std::string url() const;
  // The same with `options` added as libpq's "options" (e.g. "-c default_transaction_isolation=
  // serializable"), percent-encoded.
  std::string url_with_options(const std::string& options) const;
  std::string log_tail(std::size_t max_bytes = 2000) const;
  void stop() noexcept;

 private:
  void run_initdb();
  void start_server();
  void wait_ready();

  TempDir dir_;
  std::filesystem::path pg_dir_;
  std::uint16_t port_ = 0;
  ChildProcess process_;
};

// One server for the whole test process, started by the first call and stopped at exit: a
// PostgreSQL start costs about a second, so tests share it and each creates its own tables.
PostgresServer& shared_postgres_server();

// Runs `sql` (one or more statements, no parameters) on a fresh connection to `url`. Throws
// std::runtime_error with PostgreSQL's message when it fails.
void postgres_exec(const std::string& url, const std::string& sql);

}  // namespace fencelock::testing
