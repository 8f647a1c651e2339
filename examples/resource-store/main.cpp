// resource-store: a small HTTP service holding objects (key → value) in SQLite or PostgreSQL that
// refuses writes carrying a stale fencing token — the resource side of fencelock's contract.
//
//   resource-store [--listen 127.0.0.1:8090] [--db ./resource-store.db | postgresql://...]
//                  [--log ./resource-store.log] [--mode fenced|same-token|unfenced]
//
// --db: a SQLite file (created if missing), or a PostgreSQL URL (postgresql:// or postgres://),
// where the store creates its `objects` table if it is missing.
//
//   PUT /objects/{key}   body: the value; header Fencing-Token: N (required unless unfenced)
//                        200 {"key","token","applied":true}
//                        409 {"error":{"code":"stale_token","message":…,"current_token":M}}
//   GET /objects/{key}   optional Fencing-Token: a fenced read (raises the row's token first;
//                        a missing key records the token too, so an older holder cannot create it)
//                        200 {"key","value","token"}; 404 not_found; 409 stale_token
//
// Modes (--mode): fenced applies a write only if its token is newer than the object's, or equal
// to it right after that token's own fenced read (read, then write once); same-token also lets
// one lease write many times; unfenced applies everything (the demo's "before").
//   GET /log             the append-only operation log, one JSON object per line
//   GET /healthz         {"status":"ok","mode":…}
//
// One thread per connection (an example, not a production server); the store serializes access.
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "fencelock/names.h"
#include "object_store.h"

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using nlohmann::json;
using resource_store::Mode;
using resource_store::ObjectStore;
using Response = http::response<http::string_body>;

constexpr std::size_t kBodyLimit = std::size_t{64} * 1024;

Response reply(unsigned status, const json& body, unsigned version, bool keep_alive) {
  Response response(static_cast<http::status>(status), version);
  response.set(http::field::content_type, "application/json");
  response.keep_alive(keep_alive);
  // Values are bytes, not necessarily UTF-8: invalid sequences are answered as U+FFFD.
  response.body() = body.dump(-1, ' ', false, json::error_handler_t::replace);
  response.prepare_payload();
  return response;
}

json error(const std::string& code, const std::string& message) {
  return json{{"error", {{"code", code}, {"message", message}}}};
}

// Fencing-Token header: absent → nullopt; malformed → 0 with ok = false.
std::optional<std::uint64_t> token_header(const http::request<http::string_body>& request,
                                          bool& ok) {
  ok = true;
  const auto it = request.find("Fencing-Token");
  if (it == request.end()) return std::nullopt;
  const std::string_view text = it->value();
  std::uint64_t token = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), token);
  ok = ec == std::errc() && end == text.data() + text.size() && token > 0 &&
       token <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  return token;
}

Response handle(ObjectStore& store, const http::request<http::string_body>& request) {
  const unsigned v = request.version();
  const bool keep = request.keep_alive();
  const std::string_view target = request.target();
  if (target == "/healthz" && request.method() == http::verb::get) {
    const char* mode = store.mode() == Mode::kFenced      ? "fenced"
                       : store.mode() == Mode::kSameToken ? "same-token"
                                                          : "unfenced";
    return reply(200, json{{"status", "ok"}, {"mode", mode}}, v, keep);
  }
  if (target == "/log" && request.method() == http::verb::get) {
    Response response(http::status::ok, v);
    response.set(http::field::content_type, "application/x-ndjson");
    response.keep_alive(keep);
    response.body() = store.log_text();
    response.prepare_payload();
    return response;
  }
  constexpr std::string_view kPrefix = "/objects/";
  if (!target.starts_with(kPrefix)) return reply(404, error("not_found", "no such path"), v, keep);
  const std::string key(target.substr(kPrefix.size()));
  if (!fencelock::is_valid_lock_name(key)) {
    return reply(400,
                 error("invalid_request", "invalid key: " + std::string(fencelock::kLockNameRule)),
                 v, keep);
  }
  bool token_ok = true;
  const auto token = token_header(request, token_ok);
  if (!token_ok)
    return reply(400, error("invalid_request", "Fencing-Token must be a positive integer"), v,
                 keep);

  if (request.method() == http::verb::put) {
    if (!token && store.mode() != Mode::kUnfenced) {
      return reply(400, error("invalid_request", "writes need a Fencing-Token header"), v, keep);
    }
    auto outcome = store.put(key, request.body(), token.value_or(0));
    if (!outcome.ok()) return reply(503, error("unavailable", outcome.error().message), v, keep);
    if (!outcome->applied) {
      json body = error("stale_token", "token " + std::to_string(*token) +
                                           " is older than the newest this object has seen");
      body["error"]["current_token"] = outcome->current_token;
      return reply(409, body, v, keep);
    }
    return reply(200, json{{"key", key}, {"token", token.value_or(0)}, {"applied", true}}, v, keep);
  }
  if (request.method() == http::verb::get) {
    resource_store::PutOutcome fence;
    auto object = store.get(key, token, fence);
    if (!object.ok()) return reply(503, error("unavailable", object.error().message), v, keep);
    if (!fence.applied) {
      json body = error("stale_token", "a newer token has already read or written this object");
      body["error"]["current_token"] = fence.current_token;
      return reply(409, body, v, keep);
    }
    if (!object.value()) return reply(404, error("not_found", "no object '" + key + "'"), v, keep);
    return reply(
        200, json{{"key", key}, {"value", object.value()->value}, {"token", object.value()->token}},
        v, keep);
  }
  Response response = reply(405, error("method_not_allowed", "use GET or PUT"), v, keep);
  response.set(http::field::allow, "GET, PUT");
  return response;
}

void serve(asio::ip::tcp::socket socket, ObjectStore& store) {
  beast::flat_buffer buffer;
  beast::error_code ec;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(kBodyLimit);
    http::read(socket, buffer, parser, ec);
    if (ec == http::error::body_limit) {
      http::write(socket, reply(413, error("payload_too_large", "at most 64 KiB"), 11, false), ec);
      break;
    }
    if (ec) break;
    Response response = handle(store, parser.get());
    http::write(socket, response, ec);
    if (ec || !response.keep_alive()) break;
  }
  socket.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
}

int run(int argc, char** argv) {
  std::string listen = "127.0.0.1:8090";
  std::string db = "./resource-store.db";
  std::string log = "./resource-store.log";
  Mode mode = Mode::kFenced;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--listen")
      listen = value;
    else if (flag == "--db")
      db = value;
    else if (flag == "--log")
      log = value;
    else if (flag == "--mode" && value == "fenced")
      mode = Mode::kFenced;
    else if (flag == "--mode" && value == "same-token")
      mode = Mode::kSameToken;
    else if (flag == "--mode" && value == "unfenced")
      mode = Mode::kUnfenced;
    else {
      std::fprintf(stderr,
                   "resource-store: bad flag %s %s (see the comment at the top of main.cpp)\n",
                   flag.c_str(), value.c_str());
      return 2;
    }
  }
  if (argc % 2 == 0) {
    std::fprintf(stderr, "resource-store: %s needs a value\n", argv[argc - 1]);
    return 2;
  }
  auto store = ObjectStore::open(db, log, mode);
  if (!store.ok()) {
    std::fprintf(stderr, "resource-store: %s\n", store.error().message.c_str());
    return 1;
  }
  const auto colon = listen.rfind(':');
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(listen.substr(0, colon), ec);
  if (ec || colon == std::string::npos) {
    std::fprintf(stderr, "resource-store: --listen needs HOST:PORT with a numeric host\n");
    return 2;
  }
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io);
  const asio::ip::tcp::endpoint endpoint(
      address, static_cast<unsigned short>(std::stoi(listen.substr(colon + 1))));
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    std::fprintf(stderr, "resource-store: cannot listen on %s: %s\n", listen.c_str(),
                 ec.message().c_str());
    return 1;
  }
  std::signal(SIGPIPE, SIG_IGN);
  std::fprintf(stderr, "resource-store: listening on %s (%s)\n", listen.c_str(),
               mode == Mode::kFenced      ? "fenced"
               : mode == Mode::kSameToken ? "same-token"
                                          : "unfenced");
  for (;;) {
    asio::ip::tcp::socket socket(io);
    acceptor.accept(socket, ec);
    if (ec) continue;
    std::thread(serve, std::move(socket), std::ref(*store.value())).detach();
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // a malformed port, out of memory
    std::fprintf(stderr, "resource-store: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "resource-store: unknown error\n");
  }
  return 1;
}
