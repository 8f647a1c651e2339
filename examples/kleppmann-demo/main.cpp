// kleppmann-demo: Martin Kleppmann's "How to do distributed locking" diagram, with real processes.
//
//   kleppmann-demo --fencelock URL --fenced-store URL --unfenced-store URL [--ttl-ms 1000]
//
// Client 1 acquires the lock and is paused (SIGSTOP, a stand-in for a stop-the-world GC) for
// longer than its lease. Client 2 acquires the lock — it has expired — and writes. Client 1 wakes
// up, still believing it holds the lock, and writes with its old token. Against a store without
// fencing, client 2's data is lost; against a fenced store, client 1's write is refused. The
// scenario runs once against each store and prints a timeline. The verdict comes from each
// store's operation log, not from what the clients say. A client retries an acquire that answers
// 503 or breaks off (behind a load balancer: an instance died, the token source elects a leader)
// for up to 10 s.
//
// Exit code 0 only if the fenced store kept client 2's data.
#include <fencelock/client.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct HttpAnswer {
  unsigned status = 0;
  std::string body;
};

// One request to "http://HOST:PORT" (an address or a name), on a fresh connection; an answer
// with status 0 when the store cannot be reached.
HttpAnswer request(const std::string& base, http::verb verb, const std::string& target,
                   const std::string& body = {},
                   std::optional<std::uint64_t> token = std::nullopt) {
  const std::string hostport = base.substr(base.find("//") + 2);
  const auto colon = hostport.rfind(':');
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  beast::error_code ec;
  const auto endpoints = asio::ip::tcp::resolver(io).resolve(hostport.substr(0, colon),
                                                             hostport.substr(colon + 1), ec);
  if (!ec) asio::connect(socket, endpoints, ec);
  if (ec) return {};
  http::request<http::string_body> req(verb, target, 11);
  req.set(http::field::host, hostport);
  if (token) req.set("Fencing-Token", std::to_string(*token));
  req.body() = body;
  req.prepare_payload();
  http::write(socket, req, ec);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  if (!ec) http::read(socket, buffer, res, ec);
  if (ec) return {};
  return {res.result_int(), res.body()};
}

// Events go to stdout as "<monotonic ns> <who> <text>" so the orchestrator can merge them.
void event(const char* who, const std::string& text) {
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  std::printf("%lld %s %s\n", static_cast<long long>(ns), who, text.c_str());
  std::fflush(stdout);
}

struct Settings {
  std::string fencelock, fenced_store, unfenced_store, store, lock, key, who;
  std::chrono::milliseconds ttl{1000};
  bool pause = false;
};

// A client: acquire, maybe get paused, write with the token it was given.
int run_client(const Settings& s) {
  fencelock::ClientOptions options;
  options.endpoints = {s.fencelock};
  auto client = fencelock::Client::create(options);
  if (!client) return 2;
  // An answer of 503 or a broken connection is retried within the same 10 s: behind a load
  // balancer an instance may die, or the token source elect a new leader, while we ask.
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  auto lease = client->acquire(s.lock, s.ttl, std::chrono::seconds(10));
  while (!lease &&
         (lease.error().code == fencelock::ErrorCode::kUnavailable ||
          lease.error().code == fencelock::ErrorCode::kTransport) &&
         Clock::now() + std::chrono::milliseconds(200) < give_up) {
    event(s.who.c_str(), "acquire failed (" + lease.error().message + "), retrying");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    lease = client->acquire(
        s.lock, s.ttl,
        std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now()));
  }
  if (!lease) {
    event(s.who.c_str(), "could not acquire the lock: " + lease.error().message);
    return 1;
  }
  const std::uint64_t token = lease->token();
  event(s.who.c_str(), "acquired the lock, token " + std::to_string(token) + ", lease valid for " +
                           std::to_string(lease->remaining().count()) + " ms");
  if (s.pause) {
    event(s.who.c_str(), "PAUSED (stop-the-world GC) — the lease runs out meanwhile");
    ::raise(SIGSTOP);
    event(s.who.c_str(), "resumed after the pause; still believes it holds the lock (remaining " +
                             std::to_string(lease->remaining().count()) + " ms) and writes");
  }
  const std::string value = "written by " + s.who;
  const HttpAnswer put = request(s.store, http::verb::put, "/objects/" + s.key, value, token);
  if (put.status == 200) {
    event(s.who.c_str(),
          "write \"" + value + "\" with token " + std::to_string(token) + " -> accepted");
  } else {
    const json body = json::parse(put.body, nullptr, false);
    std::string why = put.body;
    if (body.is_object() && body.contains("error")) {
      why = body["error"].value("code", "") + " (store has seen token " +
            std::to_string(body["error"].value("current_token", 0ull)) + ")";
    }
    event(s.who.c_str(),
          "write \"" + value + "\" with token " + std::to_string(token) + " -> REJECTED: " + why);
  }
  (void)client->release(lease.value());
  return 0;
}

// Starts this program again as a client; its stdout comes back through `out`.
pid_t spawn_client(const Settings& s, const char* who, bool pause, int& out) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  std::vector<std::string> args = {"/proc/self/exe", "client",
                                   "--fencelock",    s.fencelock,
                                   "--store",        s.store,
                                   "--lock",         s.lock,
                                   "--key",          s.key,
                                   "--who",          who,
                                   "--ttl-ms",       std::to_string(s.ttl.count()),
                                   "--pause",        pause ? "1" : "0"};
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  out = fds[0];
  return pid;
}

std::string drain(int fd) {
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof(buffer))) > 0)
    text.append(buffer, static_cast<std::size_t>(n));
  ::close(fd);
  return text;
}

struct Verdict {
  bool client1_rejected = false;
  bool client2_applied = false;
  std::string final_value;
};

// Reads the store's log for `key`: what happened to each client's write, and the value left.
Verdict verdict_from_log(const std::string& store, const std::string& key) {
  Verdict v;
  std::stringstream log(request(store, http::verb::get, "/log").body);
  for (std::string line; std::getline(log, line);) {
    const json entry = json::parse(line, nullptr, false);
    if (!entry.is_object() || entry.value("key", "") != key || entry.value("op", "") != "write")
      continue;
    const std::string value = entry.value("value", "");
    const std::string outcome = entry.value("outcome", "");
    if (value == "written by client 1" && outcome == "rejected_stale") v.client1_rejected = true;
    if (value == "written by client 2" && outcome.starts_with("applied")) v.client2_applied = true;
  }
  const json object =
      json::parse(request(store, http::verb::get, "/objects/" + key).body, nullptr, false);
  if (object.is_object()) v.final_value = object.value("value", "");
  return v;
}

Verdict run_scenario(Settings s, const std::string& store, const char* title) {
  s.store = store;
  const std::string run_id = std::to_string(::getpid()) + "-" +
                             std::to_string(Clock::now().time_since_epoch().count() % 100000);
  s.lock = std::string("kleppmann-") +
           (std::strcmp(title, "fenced") == 0 ? "fenced-" : "unfenced-") + run_id;
  s.key = "invoice-" + run_id;
  std::printf("\n=== %s store (%s) ===\n", title, store.c_str());
  std::fflush(stdout);  // a script watching the output knows the scenario has begun

  int out1 = -1, out2 = -1;
  const pid_t c1 = spawn_client(s, "client 1", true, out1);
  int status = 0;
  ::waitpid(c1, &status, WUNTRACED);  // stopped: it holds the lock and is "in GC"
  std::this_thread::sleep_for(s.ttl + std::chrono::milliseconds(200));  // the lease expires
  const pid_t c2 = spawn_client(s, "client 2", false, out2);
  const std::string text2 = drain(out2);
  ::waitpid(c2, &status, 0);
  ::kill(c1, SIGCONT);
  const std::string text1 = drain(out1);
  ::waitpid(c1, &status, 0);

  // Merge both clients' events into one timeline.
  std::vector<std::pair<long long, std::string>> events;
  for (const std::string* text : {&text1, &text2}) {
    std::stringstream lines(*text);
    for (std::string line; std::getline(lines, line);) {
      const auto space = line.find(' ');
      if (space == std::string::npos) continue;
      events.emplace_back(std::stoll(line.substr(0, space)), line.substr(space + 1));
    }
  }
  std::sort(events.begin(), events.end());
  const long long origin = events.empty() ? 0 : events.front().first;
  for (const auto& [ns, text] : events)
    std::printf("  t=%6.3fs  %s\n", static_cast<double>(ns - origin) / 1e9, text.c_str());

  Verdict v = verdict_from_log(store, s.key);
  std::printf("  store now holds: \"%s\"\n", v.final_value.c_str());
  return v;
}

int run(int argc, char** argv) {
  Settings s;
  const bool client_role = argc > 1 && std::strcmp(argv[1], "client") == 0;
  for (int i = client_role ? 2 : 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--fencelock")
      s.fencelock = value;
    else if (flag == "--fenced-store")
      s.fenced_store = value;
    else if (flag == "--unfenced-store")
      s.unfenced_store = value;
    else if (flag == "--store")
      s.store = value;
    else if (flag == "--lock")
      s.lock = value;
    else if (flag == "--key")
      s.key = value;
    else if (flag == "--who")
      s.who = value;
    else if (flag == "--ttl-ms")
      s.ttl = std::chrono::milliseconds(std::stol(value));
    else if (flag == "--pause")
      s.pause = value == "1";
    else {
      std::fprintf(stderr, "kleppmann-demo: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (client_role) return run_client(s);
  if (s.fencelock.empty() || s.fenced_store.empty() || s.unfenced_store.empty()) {
    std::fprintf(stderr,
                 "usage: kleppmann-demo --fencelock URL --fenced-store URL --unfenced-store URL "
                 "[--ttl-ms 1000]\n");
    return 2;
  }
  std::printf(
      "Kleppmann's scenario: client 1 is paused past its lease; client 2 takes over and writes;\n"
      "client 1 wakes up and writes with its old token.\n");
  const Verdict unfenced = run_scenario(s, s.unfenced_store, "unfenced");
  std::printf("  -> %s\n", unfenced.final_value == "written by client 1"
                               ? "LOST UPDATE: client 1's stale write overwrote client 2's data"
                               : "(the race did not show this time)");
  const Verdict fenced = run_scenario(s, s.fenced_store, "fenced");
  const bool safe = fenced.client1_rejected && fenced.client2_applied &&
                    fenced.final_value == "written by client 2";
  std::printf("  -> %s\n", safe ? "SAFE: the stale token was rejected; client 2's data survived"
                                : "UNSAFE: the fenced store did not keep client 2's data");
  return safe ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // a malformed number in a flag, out of memory
    std::fprintf(stderr, "kleppmann-demo: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "kleppmann-demo: unknown error\n");
  }
  return 1;
}
