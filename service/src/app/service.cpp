#include "app/service.h"

#include <unistd.h>

#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "api/api_handlers.h"
#include "auth/authorizer.h"
#include "fencelock/storage/etcd_token_source.h"
#include "fencelock/storage/failpoints.h"
#include "fencelock/storage/redis_token_source.h"
#include "fencelock/storage/redlock_engine.h"
#include "fencelock/storage/sqlite_token_source.h"
#include "http/http_server.h"
#include "http/tls_context.h"
#include "ops/log.h"
#include "ops/metrics.h"
#include "ops/sighup_reloader.h"
#include "ops/systemd_notify.h"

namespace fencelock::service {

namespace asio = boost::asio;

namespace {

// How long the shutdown waits for a SIGHUP reload in progress (a few milliseconds' work unless a
// file it reads blocks) before it leaves it behind.
constexpr std::chrono::milliseconds kReloadAtShutdown{1000};

// Node transitions go to the log as well as to the metrics. Once the service is stopping, the
// engine closing its connections is expected: a node going down then is logged at debug level.
class LoggingObserver final : public storage::EngineObserver {
 public:
  explicit LoggingObserver(Metrics& metrics) : metrics_(metrics) {}
  void stopping() noexcept { stopping_.store(true, std::memory_order_relaxed); }
  void on_node_up(std::size_t node, const std::string& address,
                  const std::string& run_id) override {
    log_event(LogLevel::kInfo, "lock_node_up", {{"node", address}, {"run_id", run_id}});
    metrics_.on_node_up(node, address, run_id);
  }
  void on_node_down(std::size_t node, const std::string& address, const std::string& why) override {
    const bool stopping = stopping_.load(std::memory_order_relaxed);
    log_event(stopping ? LogLevel::kDebug : LogLevel::kWarning, "lock_node_down",
              {{"node", address}, {"reason", why}, LogField::when(stopping, {"shutdown", true})});
    if (!stopping) metrics_.on_node_down(node, address, why);
  }
  void on_node_quarantined(std::size_t node, const std::string& address,
                           std::chrono::milliseconds duration) override {
    log_event(LogLevel::kWarning, "lock_node_quarantined",
              {{"node", address},
               {"may_have_lost_keys", true},
               {"votes_ignored_for_ms", duration.count()}});
    metrics_.on_node_quarantined(node, address, duration);
  }
  void on_node_lost_keys(std::size_t, const std::string& address, const std::string& why) override {
    log_event(LogLevel::kError, "lock_node_lost_keys", {{"node", address}, {"reason", why}});
  }
  void on_node_refused(std::size_t, const std::string& address, const std::string& why) override {
    log_event(LogLevel::kError, "lock_node_refused", {{"node", address}, {"reason", why}});
  }
  void on_node_unresolved(std::size_t, const std::string& address,
                          const std::string& why) override {
    log_event(LogLevel::kError, "lock_node_unresolved",
              "node=" + address + " reason=\"" + why + "\"");
  }
  void on_node_address_changed(std::size_t, const std::string& address, const std::string& from,
                               const std::string& to) override {
    log_event(LogLevel::kInfo, "lock_node_address_changed",
              "node=" + address + " from=" + from + " to=" + to);
  }
  void on_operation(const storage::OperationReport& report) override {
    metrics_.on_operation(report);
  }
  void on_grants_refused_for_good(const std::string& why) override {
    log_event(LogLevel::kError, "TOKEN_STORE_WENT_BACK", {{"reason", why}});
  }

 private:
  Metrics& metrics_;
  std::atomic<bool> stopping_{false};
};

// The token source as the engine and the handlers see it, counting failed draws for /metrics.
class CountingTokenSource final : public storage::TokenSource {
 public:
  explicit CountingTokenSource(std::shared_ptr<storage::TokenSource> inner)
      : inner_(std::move(inner)) {}
  // The count is shared with the callback: a source may answer after this object is gone.
  void next(std::string_view name, Callback done) override {
    inner_->next(name, [errors = draw_errors_, done = std::move(done)](auto token) {
      if (!token.ok()) errors->fetch_add(1, std::memory_order_relaxed);
      done(std::move(token));
    });
  }
  void current(std::string_view name, Callback done) override {
    inner_->current(name, std::move(done));
  }
  void skip_past(std::string_view name, std::uint64_t seen) override {
    inner_->skip_past(name, seen);
  }
  bool has_history() const override { return inner_->has_history(); }
  storage::TokenTraits traits() const override { return inner_->traits(); }
  bool ready() const override { return inner_->ready(); }
  void stop() override { inner_->stop(); }
  std::uint64_t draw_errors() const noexcept {
    return draw_errors_->load(std::memory_order_relaxed);
  }

 private:
  std::shared_ptr<storage::TokenSource> inner_;
  std::shared_ptr<std::atomic<std::uint64_t>> draw_errors_ =
      std::make_shared<std::atomic<std::uint64_t>>(0);
};

// Redis credentials: the user from its flag, the password from its file (one line; a trailing
// newline is dropped) or else from the environment variable `env`. Blocking; at startup only.
ServiceResult<storage::RedisCredentials> redis_credentials(
    const std::string& user, const std::filesystem::path& password_file, const char* env) {
  storage::RedisCredentials credentials;
  credentials.username = user;
  if (!password_file.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(password_file, ec)) {
      return service_error("the password file " + password_file.string() +
                           " is not a regular file (or cannot be reached)");
    }
    std::ifstream in(password_file, std::ios::binary);
    if (!in) {
      return service_error("cannot read the password file " + password_file.string());
    }
    std::getline(in, credentials.password);
    if (!credentials.password.empty() && credentials.password.back() == '\r')
      credentials.password.pop_back();
    if (credentials.password.empty()) {
      return service_error("the password file " + password_file.string() +
                           " holds no password on its first line");
    }
  } else if (const char* value = std::getenv(env); value != nullptr) {
    credentials.password = value;
  }
  if (credentials.password.empty() && !user.empty()) {
    return service_error("a Redis user needs a password (its file, or " + std::string(env) + ")");
  }
  return credentials;
}

// The one place that knows the backends: --tokens as a source. Everything else asks the source
// (TokenSource::traits, ready, stop).
ServiceResult<std::shared_ptr<storage::TokenSource>> open_tokens(const ServiceConfig& config,
                                                                 asio::io_context& io) {
  switch (config.token_backend) {
    case TokenBackend::kSqlite: {
      storage::SqliteTokenOptions options;
      options.path = config.sqlite_path;
      auto source = storage::SqliteTokenSource::open(options);
      if (!source.ok()) return service_error(std::move(source).error().message);
      return std::shared_ptr<storage::TokenSource>(std::move(source).value());
    }
    case TokenBackend::kEtcd: {
      storage::EtcdTokenOptions options;
      options.endpoints = config.etcd_endpoints;
      options.key_prefix = config.etcd_prefix;
      options.floor = config.etcd_floor;
      options.timeout = config.token_timeout;
      auto source = storage::EtcdTokenSource::create(io.get_executor(), options);
      if (!source.ok()) return service_error(std::move(source).error().message);
      return std::shared_ptr<storage::TokenSource>(std::move(source).value());
    }
    case TokenBackend::kRedis:
      break;
  }
  storage::RedisTokenOptions options;
  options.master = config.token_master;
  options.epoch_file = config.token_epoch_file;
  options.timeout = config.token_timeout;
  options.allow_unsafe_persistence = config.tokens_unsafe_persistence;
  auto credentials =
      redis_credentials(config.token_user, config.token_password_file, "FENCELOCK_TOKEN_PASSWORD");
  if (!credentials.ok()) return std::move(credentials).error();
  options.credentials = std::move(credentials).value();
  auto source = storage::RedisTokenSource::create(io.get_executor(), options);
  if (!source.ok()) return service_error(std::move(source).error().message);
  if (!source.value()->persistence_warning().empty()) {
    log_event(LogLevel::kWarning, "UNSAFE_TOKEN_PERSISTENCE",
              {{"detail", source.value()->persistence_warning()},
               {"consequence", "fencing tokens may repeat after a counter crash"}});
  }
  return std::shared_ptr<storage::TokenSource>(std::move(source).value());
}

// The Host names fencelockd answers to (browser_guard.h): --allowed-hosts, the listen address's
// name and this machine's name. Without API keys the Host is always checked; with them only when
// --allowed-hosts is set (a browser cannot send a key it does not have).
BrowserGuardOptions browser_guard_options(const ServiceConfig& config) {
  BrowserGuardOptions options;
  options.check_host = config.auth_file.empty() || !config.allowed_hosts.empty();
  options.allowed_hosts = config.allowed_hosts;
  options.allowed_hosts.push_back(config.listen.host);
  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) == 0 && name[0] != '\0') {
    options.allowed_hosts.emplace_back(name.data());
  }
  options.allowed_origins = config.allowed_origins;
  return options;
}

// Never throws: a bad file, or one whose read does not finish within kKeyFileReadDeadline, keeps
// the keys in force.
constexpr std::chrono::milliseconds kKeyFileReadDeadline{2000};

void reload_keys(const std::filesystem::path& path, Authorizer& authorizer) {
  auto keys = KeySet::load_within(path, kKeyFileReadDeadline);
  if (!keys.ok()) {
    log_event(
        LogLevel::kError, "auth_file_rejected",
        {{"reason", keys.error().message}, {"consequence", "the previous keys stay in force"}});
    return;
  }
  const std::size_t count = keys->keys().size();
  authorizer.replace(std::move(keys).value());
  log_event(LogLevel::kInfo, "auth_file_reloaded", {{"path", path.string()}, {"keys", count}});
}

void arm_pause_after_quorum(int) {
  const int saved_errno = errno;  // a signal handler must leave errno as it found it
  storage::failpoints::arm_pause_after_quorum(std::chrono::seconds(2));
  errno = saved_errno;
}

// The fault campaign's hook (fencelock/storage/failpoints.h): with
// FENCELOCK_FAILPOINTS=pause-after-quorum, SIGUSR2 makes the next grant within 2 s stop the
// process between its quorum and its answer. Never in production.
ServiceStatus install_failpoints() {
  const char* wanted = std::getenv("FENCELOCK_FAILPOINTS");
  if (wanted == nullptr || *wanted == '\0') return Done{};
  if (std::string_view(wanted) != "pause-after-quorum") {
    return service_error(std::string("FENCELOCK_FAILPOINTS: unknown failpoint \"") + wanted +
                         "\" (the only one is pause-after-quorum)");
  }
  struct sigaction action {};
  action.sa_handler = arm_pause_after_quorum;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGUSR2, &action, nullptr);
  log_event(LogLevel::kWarning, "FAILPOINTS_ON",
            {{"failpoint", "pause-after-quorum"},
             {"signal", "SIGUSR2"},
             {"detail", "a test hook: never in production"}});
  return Done{};
}

// The key file at the start; without one, a warning that anyone who can connect may call.
ServiceStatus load_keys(const ServiceConfig& config, Authorizer& authorizer) {
  if (config.auth_file.empty()) {
    log_event(LogLevel::kWarning, "OPEN_TO_ANYONE",
              {{"detail",
                "no --auth-file: anyone who can connect may take, release and read every lock and "
                "draw tokens (docs/operations.md, \"Securing fencelock\")"}});
    return Done{};
  }
  auto keys = KeySet::load(config.auth_file);
  if (!keys.ok()) return std::move(keys).error();
  log_event(LogLevel::kInfo, "auth_file_loaded",
            {{"path", config.auth_file.string()}, {"keys", keys->keys().size()}});
  authorizer.replace(std::move(keys).value());
  return Done{};
}

// The TLS files, if any, into `tls`. Expired or not yet valid: served (a restart must not lose the
// port), but clients will refuse it — said as a warning, with why.
ServiceStatus load_tls_files(const ServiceConfig& config, std::optional<TlsContext>& tls) {
  if (config.tls_cert.empty()) return Done{};
  TlsFiles files{config.tls_cert, config.tls_key, config.tls_client_ca};
  auto loaded = load_tls(files);
  if (!loaded.ok()) return std::move(loaded).error();
  std::string fields =
      "cert=" + config.tls_cert.string() + " " + loaded->description +
      " client_certificates=" + (config.tls_client_ca.empty() ? "off" : "required");
  if (!loaded->invalid_now.empty()) fields += " problem=\"" + loaded->invalid_now + "\"";
  log_event(loaded->invalid_now.empty() ? LogLevel::kInfo : LogLevel::kWarning, "tls_loaded",
            fields);
  tls.emplace(std::move(files), std::move(loaded).value());
  return Done{};
}

// The configured engine options with the lock nodes' credentials and what the token source says
// of itself (TokenTraits).
ServiceResult<storage::EngineOptions> engine_options_for(const ServiceConfig& config,
                                                         const storage::TokenTraits& traits) {
  storage::EngineOptions options = config.engine;
  auto credentials =
      redis_credentials(config.redis_user, config.redis_password_file, "FENCELOCK_REDIS_PASSWORD");
  if (!credentials.ok()) return std::move(credentials).error();
  options.credentials = std::move(credentials).value();
  options.exclusive_tokens = traits.exclusive_id;
  options.shared_tokens = traits.shared_id;
  options.token_order = traits.order;
  return options;
}

// What /metrics shows besides the request and engine metrics; `server` and `handlers` may be null
// while they are being built.
ServiceFigures figures_now(const HttpServer* server, const ApiHandlers* handlers,
                           const storage::RedlockEngine& engine,
                           const CountingTokenSource& tokens) {
  ServiceFigures figures;
  if (server != nullptr) {
    figures.http =
        ServiceFigures::Http{server->open_connections(), server->refused_connections(),
                             server->hang_ups(), server->body_bytes_reserved(), std::nullopt};
    if (server->tls()) figures.http->tls_handshake_failures = server->tls_handshake_failures();
  }
  if (handlers != nullptr) {
    figures.acquires_waiting = handlers->waiting_acquires();
    figures.watches_waiting = handlers->waiting_watches();
  }
  figures.lock_nodes_voting = engine.voting_nodes();
  figures.token_source_up = tokens.ready() && !engine.grant_refusal();
  figures.token_draw_errors = tokens.draw_errors();
  figures.log_records_dropped = log_records_dropped();
  return figures;
}

// Counts every answered request and writes its request log line.
RequestObserver request_recorder(Metrics& metrics) {
  return [&metrics](const RequestRecord& r) {
    metrics.record_request(r.route, r.status,
                           std::chrono::duration_cast<std::chrono::nanoseconds>(r.duration));
    if (!log_enabled(LogLevel::kInfo)) return;
    static const AnswerLog nothing;
    const AnswerLog& answer = r.answer != nullptr ? *r.answer : nothing;
    log_event(
        LogLevel::kInfo, "request",
        {{"method", r.method},
         {"route", route_label(r.route)},
         LogField::if_present("name", r.name),
         {"status", r.status},
         {"duration_us", std::chrono::duration_cast<std::chrono::microseconds>(r.duration).count()},
         LogField::if_present("error", answer.error),
         LogField::if_present("token", answer.token),
         LogField::when(answer.repeated, LogField("repeated", true)),
         LogField::if_present("owner", answer.owner),
         LogField::if_present("key", answer.key),
         LogField::if_present("client", r.client),
         {"peer", r.peer},
         {"request_id", r.request_id}});
  };
}

// The HTTP server's options from the configuration.
HttpServerOptions server_options_for(const ServiceConfig& config) {
  HttpServerOptions options;
  options.listen = config.listen;
  options.body_limit = config.body_limit;
  options.max_connections = config.max_connections;
  options.max_connections_per_client = config.max_connections_per_client;
  options.idle_timeout = config.idle_timeout;
  options.request_timeout = config.request_timeout;
  options.body_memory = config.body_memory;
  options.browser = browser_guard_options(config);
  return options;
}

// What a shutdown stops, in its order.
struct Running {
  asio::io_context& io;
  const ServiceConfig& config;
  storage::RedlockEngine& engine;
  HttpServer& server;
  storage::TokenSource& tokens;
  LoggingObserver& observer;
  SighupReloader& reloader;
  ReadinessNotifier& notifier;
};

// Runs the event loop on config.threads threads until SIGTERM or SIGINT has drained it: the first
// signal stops the engine (waiting acquires are answered 503 at once), lets requests in flight
// finish within --shutdown-grace, then stops the token source; a second one stops at once.
// Returns whether it was forced.
bool serve_until_signalled(const Running& running) {
  asio::io_context& io = running.io;
  asio::signal_set signals(io, SIGTERM, SIGINT);
  std::function<void(const boost::system::error_code&, int)> on_signal;
  bool shutting_down = false;
  bool forced = false;
  on_signal = [&](const boost::system::error_code& ec, int signal_number) {
    if (ec) return;
    if (shutting_down) {  // a second signal: stop waiting for anything
      log_event(LogLevel::kWarning, "forced_shutdown", {{"signal", signal_number}});
      forced = true;
      io.stop();
      return;
    }
    shutting_down = true;
    log_event(LogLevel::kInfo, "shutting_down", {{"signal", signal_number}});
    running.observer.stopping();
    running.notifier.stopping();
    running.reloader.stop();
    signals.async_wait(on_signal);
    running.engine.stop();
    running.server.shutdown(running.config.shutdown_grace, [&] {
      running.tokens.stop();
      // Whatever still holds the loop (a node's graceful close) gets a bounded moment, then stop.
      auto last_call = std::make_shared<asio::steady_timer>(
          io, 2 * running.config.engine.node_timeout + std::chrono::milliseconds(200));
      last_call->async_wait([&io, last_call](const boost::system::error_code&) { io.stop(); });
    });
  };
  signals.async_wait(on_signal);

  // An exception escaping a completion handler is a bug; log it and keep serving.
  auto run_loop = [&io] {
    for (;;) {
      try {
        io.run();
        return;
      } catch (const std::exception& e) {
        log_event(LogLevel::kError, "internal_error", {{"what", e.what()}});
      }
    }
  };
  std::vector<std::thread> workers;
  for (unsigned i = 1; i < running.config.threads; ++i) workers.emplace_back(run_loop);
  run_loop();
  for (auto& worker : workers) worker.join();
  return forced;
}

// While serving, records (the request log above all) are written by a thread of the log's own
// (log.h): the event loop never waits for stderr. Stopped last, whichever way run_service
// returns, so that every record queued until then is written (a clean shutdown loses none).
struct AsyncLog {
  AsyncLog() {
    try {
      start_async_log();
    } catch (const std::system_error& e) {
      log_event(LogLevel::kWarning, "log_synchronous", {{"reason", e.what()}});
    }
  }
  ~AsyncLog() { stop_async_log(); }
  AsyncLog(const AsyncLog&) = delete;
  AsyncLog& operator=(const AsyncLog&) = delete;
};

// What a SIGHUP reloads: the key file, then the certificate, each kept as it is when its new files
// are bad. Shared with the reload function: a reload stuck on a file is left behind at shutdown
// and must find it alive if it ever wakes up.
struct Reloadable {
  std::filesystem::path auth_file;
  Authorizer authorizer;
  std::optional<TlsContext> tls;

  // Runs on the reloader's thread, never on the event loop.
  static void reload(Reloadable& r) {
    if (r.auth_file.empty() && !r.tls) {
      log_event(LogLevel::kInfo, "reload_skipped",
                {{"reason", "nothing to reload: no --auth-file and no --tls-cert"}});
      return;
    }
    if (!r.auth_file.empty()) reload_keys(r.auth_file, r.authorizer);
    if (r.tls) r.tls->reload();
  }
};

}  // namespace

ServiceStatus run_service(const ServiceConfig& config) {
  const AsyncLog async_log;
  asio::io_context io(static_cast<int>(config.threads));
  // The SIGHUP handler is installed before anything is read (main() ignores SIGHUP until now): a
  // SIGHUP during the start is remembered and applied once serving; one without keys or TLS only
  // says so.
  const auto reloadable = std::make_shared<Reloadable>();
  reloadable->auth_file = config.auth_file;
  SighupReloader reloader(io, [reloadable] { Reloadable::reload(*reloadable); });
  // Only now: whoever waits for "starting" before sending SIGHUP must find the handler in place.
  log_event(LogLevel::kInfo, "starting", describe(config));
  if (auto failpoints = install_failpoints(); !failpoints.ok()) return failpoints;
  if (auto keys = load_keys(config, reloadable->authorizer); !keys.ok()) return keys;
  // Before anything connects anywhere: a bad file stops the start at once.
  if (auto tls = load_tls_files(config, reloadable->tls); !tls.ok()) return tls;

  auto opened = open_tokens(config, io);
  if (!opened.ok()) return std::move(opened).error();
  const auto tokens = std::make_shared<CountingTokenSource>(std::move(opened).value());
  const storage::TokenTraits traits = tokens->traits();
  auto engine_options = engine_options_for(config, traits);
  if (!engine_options.ok()) return std::move(engine_options).error();
  Metrics metrics;
  LoggingObserver observer(metrics);
  auto created = storage::RedlockEngine::create(
      io.get_executor(), std::move(engine_options).value(), tokens, &observer);
  if (!created.ok()) return service_error(std::move(created).error().message);
  const std::unique_ptr<storage::RedlockEngine> engine = std::move(created).value();

  const HttpServer* server_ptr = nullptr;
  const ApiHandlers* handlers_ptr = nullptr;
  ApiHandlers handlers(
      *engine, tokens,
      [&metrics, &engine, &server_ptr, &handlers_ptr, tokens] {
        return metrics.render(
            engine->node_statuses(),
            service_gauges(figures_now(server_ptr, handlers_ptr, *engine, *tokens)));
      },
      &reloadable->authorizer);
  handlers_ptr = &handlers;
  std::optional<TlsContext>& tls = reloadable->tls;
  HttpServer server(io, server_options_for(config), handlers, request_recorder(metrics),
                    tls ? &*tls : nullptr);
  server_ptr = &server;
  if (auto listening = server.listen(); !listening.ok()) {
    engine->stop();
    tokens->stop();
    io.run_for(std::chrono::seconds(1));
    return listening;
  }

  engine->start();
  server.start_accepting();
  log_event(LogLevel::kInfo, "listening",
            {{"address", config.listen.host + ":" + std::to_string(server.port())},
             {"scheme", tls ? "https" : "http"},
             {"threads", config.threads}});
  reloader.start();
  // $NOTIFY_SOCKET: systemd's Type=notify learns when /readyz would first answer 200.
  const char* notify_socket = std::getenv("NOTIFY_SOCKET");
  ReadinessNotifier notifier(io, notify_socket ? notify_socket : "", [&handlers] {
    const ApiHandlers::ReadyState state = handlers.ready_state();
    return ReadinessNotifier::Readiness{state.ready(), state.summary()};
  });
  notifier.start();
  const bool forced = serve_until_signalled(
      Running{io, config, *engine, server, *tokens, observer, reloader, notifier});
  if (!reloader.finish(forced ? std::chrono::milliseconds(0) : kReloadAtShutdown)) {
    log_event(LogLevel::kWarning, "reload_abandoned",
              {{"reason",
                "a SIGHUP reload still running at shutdown (blocked reading a file?) is left "
                "behind; the process exits without it"}});
  }
  log_event(LogLevel::kInfo, "stopped");
  return Done{};
}

}  // namespace fencelock::service
