// fencelock: the command-line client of fencelockd (docs/cli.md). `fencelock --help` lists the
// commands and exit codes.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "acquire_waiting.h"
#include "cli_args.h"
#include "fencelock/client.h"
#include "lease_json.h"
#include "run_command.h"

namespace {

using namespace fencelock;
using namespace fencelock::cli;
using nlohmann::json;

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::optional<std::string>(value) : std::nullopt;
}

int fail(const Error& error, const char* what) {
  std::fprintf(stderr, "fencelock: %s: %s\n", what, error.message.c_str());
  return exit_code_for(error);
}

int print(const json& body) {
  std::printf("%s\n", body.dump().c_str());
  std::fflush(stdout);  // before any message on stderr about it
  return kExitOk;
}

// The lease that extend and release name on the command line, rebuilt from its string.
Result<Lease> lease_of(const CliArgs& a) {
  auto lease = lease_from_string(lease_kind_of(a), a.names, a.lease, a.ttl);
  if (lease.ok() && a.permits && lease->permits() != *a.permits) {
    return Error{ErrorCode::kInvalidArgument,
                 "the lease is a permit of a semaphore with " + std::to_string(lease->permits()) +
                     " permits, not --permits " + std::to_string(*a.permits),
                 0, std::nullopt};
  }
  return lease;
}

// One function per command: each prints its answer and returns the exit code.
using CommandFunction = int (*)(Client& client, const CliArgs& a);

int acquire_command(Client& client, const CliArgs& a) {
  auto lease = acquire_waiting(client, a);
  if (!lease.ok()) return fail(lease.error(), ("acquire " + a.name).c_str());
  return print(acquired_json(lease.value()));
}

// Prints {"<field>":[...]}: every entry of a listing, read page by page (`read_page(cursor,
// limit)` reads one of at most about `limit` entries), each as `word` words it. With `most`, stops
// at that many entries and adds "truncated": true when the listing had more pages.
template <class Listing, class Entry, class ReadPage>
int print_listing(const char* field, ReadPage read_page, std::vector<Entry> Listing::*entries,
                  json (*word)(const Entry&), std::optional<std::size_t> most) {
  constexpr std::size_t kPage = 1000;
  json listed = json::array();
  std::string cursor;
  bool truncated = false;
  const auto full = [&] { return most && listed.size() == *most; };
  for (int page = 0; page < 10'000 && !truncated; ++page) {  // bounded: 10 million names at most
    const std::size_t room = most ? *most - listed.size() : kPage;
    Result<Listing> one = read_page(cursor, std::min(kPage, room));
    if (!one.ok()) return fail(one.error(), "list");
    for (const Entry& entry : one.value().*entries) {
      truncated = full();
      if (truncated) break;
      listed.push_back(word(entry));
    }
    if (!one->next) break;
    cursor = *one->next;
    truncated = full();  // the listing goes on: there may be more
  }
  json out{{field, std::move(listed)}};
  if (truncated) out["truncated"] = true;
  return print(out);
}

json held_lock_json(const HeldLock& held) {
  json lock{{"name", held.name},
            {"token", nullptr},
            {"owner", nullptr},
            {"remaining_ms", held.remaining.count()}};
  if (held.token) lock["token"] = *held.token;
  if (held.owner) lock["owner"] = *held.owner;
  return lock;
}

// What `semaphore NAME` prints, and each entry of `list --semaphores`.
json semaphore_json(const std::string& name, const SemaphoreStatus& status) {
  return json{{"name", name}, {"permits", status.permits}, {"held", status.held}};
}

json listed_semaphore_json(const ListedSemaphore& listed) {
  return semaphore_json(listed.name, listed.status);
}

// As GET /v1/rwlocks/{name} answers it.
json listed_rwlock_json(const ListedRwLock& listed) {
  json holders = json::array();
  for (const RwLockStatus::Holder& holder : listed.status.holders) {
    json one{
        {"token", holder.token}, {"owner", nullptr}, {"remaining_ms", holder.remaining.count()}};
    if (holder.owner) one["owner"] = *holder.owner;
    holders.push_back(std::move(one));
  }
  json mode = nullptr;
  if (listed.status.mode) mode = *listed.status.mode == LeaseKind::kWrite ? "write" : "read";
  return json{{"name", listed.name},
              {"mode", std::move(mode)},
              {"holders", std::move(holders)},
              {"writer_waiting", listed.status.writer_waiting}};
}

int list_command(Client& client, const CliArgs& a) {
  const std::string& prefix = a.name;
  switch (a.list_kind) {
    case ListKind::kSemaphores:
      return print_listing(
          "semaphores",
          [&](const std::string& cursor, std::size_t page) {
            return client.list_semaphores(prefix, page, cursor);
          },
          &SemaphoreListing::semaphores, listed_semaphore_json, a.list_limit);
    case ListKind::kRwLocks:
      return print_listing(
          "rwlocks",
          [&](const std::string& cursor, std::size_t page) {
            return client.list_rwlocks(prefix, page, cursor);
          },
          &RwLockListing::rwlocks, listed_rwlock_json, a.list_limit);
    case ListKind::kLocks:
      break;
  }
  return print_listing(
      "locks",
      [&](const std::string& cursor, std::size_t page) {
        return client.list_locks(prefix, page, cursor);
      },
      &LockListing::locks, held_lock_json, a.list_limit);
}

int revoke_command(Client& client, const CliArgs& a) {
  say(a, "revoking '" + a.name + "'");
  auto lease = client.revoke(a.name, a.ttl, a.owner);
  if (!lease.ok()) return fail(lease.error(), ("revoke " + a.name).c_str());
  return print(acquired_json(lease.value()));
}

int extend_command(Client& client, const CliArgs& a) {
  auto lease = lease_of(a);
  if (!lease.ok()) return fail(lease.error(), ("extend " + a.name).c_str());
  say(a, "extending '" + a.name + "'");
  auto extended = client.extend(lease.value(), a.ttl);
  if (!extended.ok()) return fail(extended.error(), ("extend " + a.name).c_str());
  json body = lease_identity_json(lease.value());
  body["ttl_ms"] = a.ttl.count();
  body["validity_ms"] = lease->remaining().count();
  return print(body);
}

int release_command(Client& client, const CliArgs& a) {
  auto lease = lease_of(a);
  if (!lease.ok()) return fail(lease.error(), ("release " + a.name).c_str());
  say(a, "releasing '" + a.name + "'");
  auto released = client.release(lease.value());
  if (!released.ok()) return fail(released.error(), ("release " + a.name).c_str());
  json body = lease_identity_json(lease.value());
  body["released"] = released.value();
  print(body);
  if (released.value()) return kExitOk;
  std::fprintf(stderr,
               "fencelock: release %s: the lease no longer held the lock (expired, released or "
               "taken over)\n",
               a.name.c_str());
  return kExitNotHeld;
}

int semaphore_command(Client& client, const CliArgs& a) {
  auto status = client.semaphore_status(a.name);
  if (!status.ok()) return fail(status.error(), ("semaphore " + a.name).c_str());
  return print(semaphore_json(a.name, status.value()));
}

// The fields a status and a watch print alike.
json status_json(const std::string& name, const LockStatus& status) {
  json body{{"name", name},
            {"held", status.held},
            {"remaining_ms", nullptr},
            {"token", nullptr},
            {"owner", nullptr}};
  if (status.remaining) body["remaining_ms"] = status.remaining->count();
  if (status.token) body["token"] = *status.token;
  if (status.owner) body["owner"] = *status.owner;
  return body;
}

int status_command(Client& client, const CliArgs& a) {
  auto status = client.status(a.name);
  if (!status.ok()) return fail(status.error(), ("status " + a.name).c_str());
  json body = status_json(a.name, status.value());
  body["last_token"] = status->last_token;
  return print(body);
}

// Watches in requests of at most kWatchRequest (the service cuts a longer wait to its --max-wait,
// and may cut this one too) until the lock changed or --wait ran out, by the clock, not by the
// waits asked for.
constexpr std::chrono::milliseconds kWatchRequest{30'000};

int watch_command(Client& client, const CliArgs& a) {
  using std::chrono::milliseconds;
  std::uint64_t token = 0;
  if (a.watched_token) {
    token = *a.watched_token;
  } else {
    auto now = client.status(a.name);
    if (!now.ok()) return fail(now.error(), ("watch " + a.name).c_str());
    if (!now->held || !now->token) {
      json body = status_json(a.name, now.value());
      body["changed"] = true;
      return print(body);
    }
    token = *now->token;
  }
  say(a, "watching '" + a.name + "' held with token " + std::to_string(token));
  const milliseconds budget = a.wait_given ? a.wait : kWatchRequest;
  const auto deadline = std::chrono::steady_clock::now() + budget;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
    const milliseconds chunk =
        a.wait_forever ? kWatchRequest : std::clamp(left, milliseconds(0), kWatchRequest);
    auto watched = client.watch(a.name, token, chunk);
    if (!watched.ok()) return fail(watched.error(), ("watch " + a.name).c_str());
    if (watched->changed || (!a.wait_forever && std::chrono::steady_clock::now() >= deadline)) {
      json body = status_json(a.name, watched.value());
      body["changed"] = watched->changed;
      print(body);
      return watched->changed ? kExitOk : kExitLocked;
    }
  }
}

int token_command(Client& client, const CliArgs& a) {
  auto token = a.next_token ? client.next_token(a.name) : client.current_token(a.name);
  if (!token.ok()) return fail(token.error(), ("token " + a.name).c_str());
  return print(json{{"name", a.name}, {"token", token.value()}});
}

CommandFunction command_function(Command command) {
  switch (command) {
    case Command::kRun:
      return run_command;
    case Command::kAcquire:
      return acquire_command;
    case Command::kList:
      return list_command;
    case Command::kRevoke:
      return revoke_command;
    case Command::kExtend:
      return extend_command;
    case Command::kRelease:
      return release_command;
    case Command::kSemaphore:
      return semaphore_command;
    case Command::kStatus:
      return status_command;
    case Command::kWatch:
      return watch_command;
    case Command::kToken:
      return token_command;
    case Command::kHelp:
    case Command::kVersion:
      break;
  }
  return nullptr;
}

// The client the command line asks for, or the exit code of why there is none.
Result<Client> client_for(const CliArgs& a) {
  ClientOptions options;
  options.endpoints = endpoints_of(a);
  // Enough attempts of a retry-safe call to reach every endpoint once.
  options.max_retries =
      std::clamp(static_cast<int>(options.endpoints.size()), options.max_retries, 10);
  options.api_key = a.api_key;
  options.ca_file = a.cacert;
  options.cert_file = a.cert;
  options.key_file = a.key;
  options.request_timeout = a.timeout;
  auto created = Client::create(options);
  if (!created.ok()) return created;
  std::string endpoint_list;
  for (const auto& endpoint : options.endpoints)
    endpoint_list += (endpoint_list.empty() ? "" : ", ") + endpoint;
  say(a, "endpoints " + endpoint_list + " (tried in this order)");
  return created;
}

int run(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  auto parsed = parse_cli(args, env("FENCELOCK_ENDPOINT"), env("FENCELOCK_LEASE"));
  if (!parsed.ok()) {
    std::fprintf(stderr, "fencelock: %s\n", parsed.error().message.c_str());
    return kExitUsage;
  }
  fill_from_environment(parsed.value(), env);
  const CliArgs& a = parsed.value();
  if (a.command == Command::kHelp) {
    std::fputs(cli_usage().c_str(), stdout);
    return kExitOk;
  }
  if (a.command == Command::kVersion) {
    std::printf("fencelock 0.1.0\n");
    return kExitOk;
  }
  if (auto tls_files = check_tls_files(a); !tls_files.ok()) {
    std::fprintf(stderr, "fencelock: %s\n", tls_files.error().message.c_str());
    return kExitUsage;
  }
  auto client = client_for(a);
  if (!client.ok()) return fail(client.error(), "bad --endpoint, API key or TLS file");
  return command_function(a.command)(client.value(), a);
}

}  // namespace

// The one catch of the program: a surprise (out of memory, a bug) is reported, not a terminate().
int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", "fencelock", e.what());
    return kExitError;
  }
}
