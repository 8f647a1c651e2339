#include "fencelock/client.h"

#include <algorithm>
#include <boost/asio/ssl/context.hpp>
#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "client_impl.h"
#include "client_tls.h"
#include "fencelock/api_paths.h"
#include "fencelock/host_port.h"
#include "fencelock/names.h"
#include "fencelock/wire_error.h"
#include "http_connection.h"

namespace fencelock {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How the SDK files each wire error: what a caller does about it.
ErrorCode sdk_code_for(WireError error) {
  switch (error) {
    case WireError::kLocked:
      return ErrorCode::kLocked;
    case WireError::kNotHeld:
      return ErrorCode::kNotHeld;
    case WireError::kUnavailable:
      return ErrorCode::kUnavailable;
    case WireError::kUnauthenticated:
    case WireError::kForbidden:
    case WireError::kCrossSiteRequest:
    case WireError::kHostNotAllowed:
      return ErrorCode::kDenied;
    case WireError::kRateLimited:
    case WireError::kQuotaExceeded:
      return ErrorCode::kRateLimited;
    case WireError::kInvalidRequest:
    case WireError::kPayloadTooLarge:
    case WireError::kNotFound:
    case WireError::kMethodNotAllowed:
    case WireError::kPlainHttpOnTlsPort:
    case WireError::kUnsupportedMediaType:
      return ErrorCode::kInvalidArgument;
    case WireError::kPermitsMismatch:
      return ErrorCode::kPermitsMismatch;
    case WireError::kInternal:
    case WireError::kClientGone:
      return ErrorCode::kInternal;
  }
  return ErrorCode::kInternal;
}

Result<json> json_body(const HttpReply& reply) {
  json body = json::parse(reply.body, nullptr, false);
  if (!body.is_object())
    return make(ErrorCode::kInternal, "the service answered something that is not a JSON object",
                reply.status);
  return body;
}

}  // namespace

Error make(ErrorCode code, std::string message, unsigned status) {
  return Error{code, std::move(message), status, std::nullopt};
}

Error error_from_reply(const HttpReply& reply) {
  const json body = json::parse(reply.body, nullptr, false);
  std::string code;
  std::string message = "HTTP " + std::to_string(reply.status);
  std::optional<milliseconds> retry_after;
  if (body.is_object() && body.contains("error") && body["error"].is_object()) {
    const json& e = body["error"];
    if (e.contains("code") && e["code"].is_string()) code = e["code"].get<std::string>();
    if (e.contains("message") && e["message"].is_string())
      message = e["message"].get<std::string>();
    if (e.contains("retry_after_ms") && e["retry_after_ms"].is_number_integer()) {
      retry_after = milliseconds(e["retry_after_ms"].get<std::int64_t>());
    }
  }
  // The code decides; a body without a code this version knows is filed by its status.
  ErrorCode mapped = ErrorCode::kInternal;
  if (const auto wire = wire_error_from_code(code)) {
    mapped = sdk_code_for(*wire);
  } else if (reply.status == 503) {
    mapped = ErrorCode::kUnavailable;
  } else if (reply.status >= 400 && reply.status < 500) {
    mapped = ErrorCode::kInvalidArgument;
  }
  return Error{mapped, std::move(message), reply.status, retry_after};
}

Result<json> expect_object(Result<HttpReply> reply) {
  if (!reply.ok()) return std::move(reply).error();
  if (reply->status != 200) return error_from_reply(reply.value());
  return json_body(reply.value());
}

namespace {

Result<Endpoint> parse_endpoint(std::string_view url) {
  const std::string original(url);
  constexpr std::string_view kHttp = "http://";
  constexpr std::string_view kHttps = "https://";
  Endpoint endpoint;
  if (url.starts_with(kHttps)) {
    endpoint.tls = true;
    url.remove_prefix(kHttps.size());
  } else if (url.starts_with(kHttp)) {
    url.remove_prefix(kHttp.size());
  } else {
    return make(ErrorCode::kInvalidArgument,
                "endpoint '" + original + "' must start with http:// or https://");
  }
  if (url.ends_with('/')) url.remove_suffix(1);
  auto address = parse_address(url);
  if (!address)
    return make(ErrorCode::kInvalidArgument, "endpoint '" + original + "': " + address.error());
  endpoint.address = std::move(address).value();
  if (endpoint.tls) endpoint.tls_name = endpoint.address.tls_name();
  return endpoint;
}

// Reads an integer field of a success body, or fails with kInternal.
template <class T>
Result<T> field(const json& body, const char* name) {
  if (!body.contains(name) || !body[name].is_number_integer()) {
    return make(ErrorCode::kInternal,
                std::string("the service's answer lacks the integer '") + name + "'");
  }
  return body[name].get<T>();
}

Status check_name(std::string_view name) {
  if (!is_valid_lock_name(name)) {
    return make(ErrorCode::kInvalidArgument, std::string(kLockNameRule));
  }
  return Done{};
}

// The bounds the service keeps (docs/api.md), checked before anything is sent.
constexpr std::size_t kMaxSetNames = 16;
constexpr std::uint32_t kMaxPermits = 64;

// A lock set's names in canonical (sorted) order, or why they cannot form one.
Result<std::vector<std::string>> canonical_names(const std::vector<std::string>& names) {
  if (names.empty() || names.size() > kMaxSetNames)
    return make(ErrorCode::kInvalidArgument, "a lock set needs 1 to 16 names");
  for (const auto& name : names) {
    if (!is_valid_lock_name(name)) {
      return make(ErrorCode::kInvalidArgument, "'" + name + "': " + std::string(kLockNameRule));
    }
  }
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  if (const auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end())
    return make(ErrorCode::kInvalidArgument, "'" + *twice + "' is named twice in the lock set");
  return sorted;
}

Status check_acquire(std::chrono::milliseconds ttl, std::chrono::milliseconds wait) {
  if (ttl.count() <= 0 || wait.count() < 0)
    return make(ErrorCode::kInvalidArgument, "ttl must be positive and wait not negative");
  return Done{};
}

// The body of an acquire of any kind: ttl_ms, and wait_ms and owner when given.
json acquire_body(std::chrono::milliseconds ttl, std::chrono::milliseconds wait,
                  std::string_view owner) {
  json body{{"ttl_ms", ttl.count()}};
  if (wait.count() > 0) body["wait_ms"] = wait.count();
  if (!owner.empty()) body["owner"] = std::string(owner);
  return body;
}

// What every grant answers: the lease string and when the lease ends at the latest — the send
// time plus waited_ms (absent from services that predate it) plus validity_ms. Conservative: the
// validity counts from the start of the winning attempt, which is no earlier than our send time
// plus the time the service says it waited.
struct Grant {
  std::string lease_string;
  Clock::time_point deadline;
};

Result<Grant> grant_of(const json& body, Clock::time_point sent_at) {
  auto validity = field<std::int64_t>(body, "validity_ms");
  if (!validity.ok()) return std::move(validity).error();
  if (!body.contains("lease") || !body["lease"].is_string())
    return make(ErrorCode::kInternal, "the service's answer lacks the lease");
  milliseconds waited{0};
  if (body.contains("waited_ms")) {
    auto field_value = field<std::int64_t>(body, "waited_ms");
    if (!field_value.ok()) return std::move(field_value).error();
    waited = milliseconds(field_value.value());
  }
  return Grant{body["lease"].get<std::string>(), sent_at + waited + milliseconds(validity.value())};
}

// A lock set's tokens, in the order of `names`, from the answer's {"tokens":{"a":17,...}}.
Result<std::vector<std::uint64_t>> tokens_of(const json& body,
                                             const std::vector<std::string>& names) {
  if (!body.contains("tokens") || !body["tokens"].is_object())
    return make(ErrorCode::kInternal, "the service's answer lacks the tokens");
  std::vector<std::uint64_t> tokens;
  for (const auto& name : names) {
    auto token = field<std::uint64_t>(body["tokens"], name.c_str());
    if (!token.ok()) return std::move(token).error();
    tokens.push_back(token.value());
  }
  return tokens;
}

// The target of an extend (`extend` true) or a release of `lease`, by its kind.
std::string target_of(const Lease& lease, bool extend) {
  switch (lease.kind()) {
    case LeaseKind::kSet:
      return std::string(extend ? api_paths::kLockSetExtend : api_paths::kLockSet);
    case LeaseKind::kPermit:
      return api_paths::expand(extend ? api_paths::kSemaphoreExtend : api_paths::kSemaphore,
                               lease.name());
    case LeaseKind::kRead:
    case LeaseKind::kWrite:
      return api_paths::expand(extend ? api_paths::kRwLockExtend : api_paths::kRwLock,
                               lease.name());
    case LeaseKind::kLock:
      break;
  }
  return api_paths::expand(extend ? api_paths::kLockExtend : api_paths::kLock, lease.name());
}

}  // namespace

Result<Client> Client::create(ClientOptions options) {
  if (options.endpoints.empty() || options.endpoints.size() > 16) {
    return make(ErrorCode::kInvalidArgument, "endpoints: need 1 to 16 fencelockd URLs");
  }
  auto in = [](milliseconds v, milliseconds lo, milliseconds hi) { return v >= lo && v <= hi; };
  if (!in(options.connect_timeout, milliseconds(1), milliseconds(60'000)))
    return make(ErrorCode::kInvalidArgument, "connect_timeout must be 1 ms .. 60 s");
  if (!in(options.request_timeout, milliseconds(1), milliseconds(600'000)))
    return make(ErrorCode::kInvalidArgument, "request_timeout must be 1 ms .. 10 min");
  if (options.max_retries < 0 || options.max_retries > 10)
    return make(ErrorCode::kInvalidArgument, "max_retries must be 0..10");
  if (!in(options.retry_backoff, milliseconds(0), milliseconds(10'000)))
    return make(ErrorCode::kInvalidArgument, "retry_backoff must be 0 .. 10 s");
  if (options.max_idle_connections > 1024)
    return make(ErrorCode::kInvalidArgument, "max_idle_connections must be 0..1024");
  if (options.api_key.size() > 256 || !std::all_of(options.api_key.begin(), options.api_key.end(),
                                                   [](char c) { return c > ' ' && c < 127; }))
    return make(ErrorCode::kInvalidArgument,
                "api_key must be at most 256 printable ASCII characters without spaces");
  std::vector<Endpoint> endpoints;
  bool any_tls = false;
  const bool tls_asked =
      !options.ca_file.empty() || !options.cert_file.empty() || !options.key_file.empty();
  for (const auto& url : options.endpoints) {
    auto endpoint = parse_endpoint(url);
    if (!endpoint.ok()) return std::move(endpoint).error();
    // Asked to check certificates, an http:// endpoint would instead send the API key and the
    // leases in clear: a typo or a template must not downgrade silently.
    if (tls_asked && !endpoint->tls) {
      return make(ErrorCode::kInvalidArgument,
                  "ca_file, cert_file and key_file are for https:// endpoints: '" + url +
                      "' is plain HTTP, unencrypted (use https://)");
    }
    any_tls = any_tls || endpoint->tls;
    endpoints.push_back(std::move(endpoint).value());
  }
  std::shared_ptr<boost::asio::ssl::context> tls;
  if (any_tls) {
    auto context = make_tls_context(options);
    if (!context.ok()) return std::move(context).error();
    tls = std::move(context).value();
  }
  return Client(std::make_unique<Impl>(std::move(options), std::move(endpoints), std::move(tls)));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;
Client::~Client() = default;

const ClientOptions& Client::options() const noexcept {
  return impl_->options();
}

namespace {

// A single lock's grant (acquire, revoke) read off the service's answer.
Result<Lease> lock_grant(Result<json> parsed, std::string_view name, milliseconds ttl,
                         Clock::time_point sent_at) {
  if (!parsed.ok()) return std::move(parsed).error();
  auto token = field<std::uint64_t>(parsed.value(), "token");
  if (!token.ok()) return std::move(token).error();
  auto grant = grant_of(parsed.value(), sent_at);
  if (!grant.ok()) return std::move(grant).error();
  return Lease(std::string(name), std::move(grant->lease_string), token.value(), ttl,
               grant->deadline);
}

}  // namespace

Result<Lease> Client::acquire(std::string_view name, milliseconds ttl, milliseconds wait,
                              std::string_view owner, std::string_view request_id) {
  if (auto valid = check_name(name); !valid.ok()) return std::move(valid).error();
  if (auto valid = check_acquire(ttl, wait); !valid.ok()) return std::move(valid).error();
  json body = acquire_body(ttl, wait, owner);
  // Without an id (the random source failed) it goes once, not again once it may have arrived.
  const std::string id = request_id.empty() ? new_request_id() : std::string(request_id);
  if (!id.empty()) body["request_id"] = id;
  Clock::time_point sent_at;
  auto parsed = expect_object(
      impl_->call("POST", api_paths::expand(api_paths::kLock, name), body.dump(),
                  id.empty() ? Impl::Retry::kOnlyIfUndelivered : Impl::Retry::kRepeatable, wait,
                  std::nullopt, sent_at));
  return lock_grant(std::move(parsed), name, ttl, sent_at);
}

Result<Lease> Client::revoke(std::string_view name, milliseconds ttl, std::string_view owner) {
  if (auto valid = check_name(name); !valid.ok()) return std::move(valid).error();
  if (auto valid = check_acquire(ttl, milliseconds(0)); !valid.ok())
    return std::move(valid).error();
  Clock::time_point sent_at;
  auto parsed = expect_object(impl_->call("POST", api_paths::expand(api_paths::kLockRevoke, name),
                                          acquire_body(ttl, milliseconds(0), owner).dump(),
                                          Impl::Retry::kOnlyIfUndelivered, milliseconds(0),
                                          std::nullopt, sent_at));
  return lock_grant(std::move(parsed), name, ttl, sent_at);
}

Result<Lease> Client::acquire_set(const std::vector<std::string>& names, milliseconds ttl,
                                  milliseconds wait, std::string_view owner) {
  auto sorted = canonical_names(names);
  if (!sorted.ok()) return std::move(sorted).error();
  if (auto valid = check_acquire(ttl, wait); !valid.ok()) return std::move(valid).error();
  json body = acquire_body(ttl, wait, owner);
  body["names"] = sorted.value();
  Clock::time_point sent_at;
  auto parsed =
      expect_object(impl_->call("POST", std::string(api_paths::kLockSet), body.dump(),
                                Impl::Retry::kOnlyIfUndelivered, wait, std::nullopt, sent_at));
  if (!parsed.ok()) return std::move(parsed).error();
  auto tokens = tokens_of(parsed.value(), sorted.value());
  if (!tokens.ok()) return std::move(tokens).error();
  auto grant = grant_of(parsed.value(), sent_at);
  if (!grant.ok()) return std::move(grant).error();
  return Lease::lock_set(std::move(sorted).value(), std::move(tokens).value(),
                         std::move(grant->lease_string), ttl, grant->deadline);
}

Result<Lease> Client::acquire_permit(std::string_view name, std::uint32_t permits, milliseconds ttl,
                                     milliseconds wait, std::string_view owner) {
  if (auto valid = check_name(name); !valid.ok()) return std::move(valid).error();
  if (permits < 1 || permits > kMaxPermits)
    return make(ErrorCode::kInvalidArgument, "permits must be 1..64");
  if (auto valid = check_acquire(ttl, wait); !valid.ok()) return std::move(valid).error();
  json body = acquire_body(ttl, wait, owner);
  body["permits"] = permits;
  Clock::time_point sent_at;
  auto parsed =
      expect_object(impl_->call("POST", api_paths::expand(api_paths::kSemaphore, name), body.dump(),
                                Impl::Retry::kOnlyIfUndelivered, wait, std::nullopt, sent_at));
  if (!parsed.ok()) return std::move(parsed).error();
  auto token = field<std::uint64_t>(parsed.value(), "token");
  if (!token.ok()) return std::move(token).error();
  auto slot = field<std::uint32_t>(parsed.value(), "slot");
  if (!slot.ok()) return std::move(slot).error();
  auto grant = grant_of(parsed.value(), sent_at);
  if (!grant.ok()) return std::move(grant).error();
  return Lease::permit(std::string(name), permits, slot.value(), std::move(grant->lease_string),
                       token.value(), ttl, grant->deadline);
}

namespace {

// A read/write lock's acquire (POST /v1/rwlocks/{name}) in `mode` (kRead or kWrite).
Result<Lease> acquire_rw(Client::Impl& impl, std::string_view name, LeaseKind mode,
                         milliseconds ttl, milliseconds wait, std::string_view owner) {
  if (auto valid = check_name(name); !valid.ok()) return std::move(valid).error();
  if (auto valid = check_acquire(ttl, wait); !valid.ok()) return std::move(valid).error();
  json body = acquire_body(ttl, wait, owner);
  body["mode"] = mode == LeaseKind::kWrite ? "write" : "read";
  Clock::time_point sent_at;
  auto parsed = expect_object(impl.call("POST", api_paths::expand(api_paths::kRwLock, name),
                                        body.dump(), Client::Impl::Retry::kOnlyIfUndelivered, wait,
                                        std::nullopt, sent_at));
  if (!parsed.ok()) return std::move(parsed).error();
  // A grant in another mode would fence wrongly: a reader that thinks it writes alone.
  if (parsed.value().value("mode", std::string()) != body["mode"])
    return make(ErrorCode::kInternal, "the service granted another mode than the one asked for");
  auto token = field<std::uint64_t>(parsed.value(), "token");
  if (!token.ok()) return std::move(token).error();
  auto grant = grant_of(parsed.value(), sent_at);
  if (!grant.ok()) return std::move(grant).error();
  return Lease::rw_grant(mode, std::string(name), std::move(grant->lease_string), token.value(),
                         ttl, grant->deadline);
}

}  // namespace

Result<Lease> Client::acquire_read(std::string_view name, milliseconds ttl, milliseconds wait,
                                   std::string_view owner) {
  return acquire_rw(*impl_, name, LeaseKind::kRead, ttl, wait, owner);
}

Result<Lease> Client::acquire_write(std::string_view name, milliseconds ttl, milliseconds wait,
                                    std::string_view owner) {
  return acquire_rw(*impl_, name, LeaseKind::kWrite, ttl, wait, owner);
}

Result<RwLockStatus> rwlock_status_of(const json& body) {
  if (!body.contains("holders") || !body["holders"].is_array() || !body.contains("mode") ||
      !body.contains("writer_waiting") || !body["writer_waiting"].is_boolean())
    return make(ErrorCode::kInternal, "the service's answer is not a read/write lock's status");
  RwLockStatus status;
  if (body["mode"] == "read") status.mode = LeaseKind::kRead;
  if (body["mode"] == "write") status.mode = LeaseKind::kWrite;
  status.writer_waiting = body["writer_waiting"].get<bool>();
  for (const json& holder : body["holders"]) {
    auto token = field<std::uint64_t>(holder, "token");
    if (!token.ok()) return std::move(token).error();
    auto remaining = field<std::int64_t>(holder, "remaining_ms");
    if (!remaining.ok()) return std::move(remaining).error();
    RwLockStatus::Holder entry{token.value(), std::nullopt, milliseconds(remaining.value())};
    if (holder.contains("owner") && holder["owner"].is_string())
      entry.owner = holder["owner"].get<std::string>();
    status.holders.push_back(std::move(entry));
  }
  return status;
}

namespace {

// GET of one name's status at `path` (an api_paths template): its JSON object, or the error.
Result<json> get_status(Client::Impl& impl, std::string_view path, std::string_view name) {
  if (auto valid = check_name(name); !valid.ok()) return std::move(valid).error();
  Clock::time_point sent_at;
  return expect_object(impl.call("GET", api_paths::expand(path, name), {},
                                 Client::Impl::Retry::kSafe, milliseconds(0), std::nullopt,
                                 sent_at));
}

}  // namespace

Result<RwLockStatus> Client::rwlock_status(std::string_view name) {
  auto parsed = get_status(*impl_, api_paths::kRwLock, name);
  if (!parsed.ok()) return std::move(parsed).error();
  return rwlock_status_of(parsed.value());
}

Status Client::extend(Lease& lease, milliseconds ttl, std::optional<milliseconds> within) {
  if (ttl.count() <= 0) return make(ErrorCode::kInvalidArgument, "ttl must be positive");
  json body{{"lease", lease.lease_string()}, {"ttl_ms", ttl.count()}};
  if (lease.kind() == LeaseKind::kSet) body["names"] = lease.names();
  Clock::time_point sent_at;
  auto parsed = expect_object(impl_->call("POST", target_of(lease, true), body.dump(),
                                          Impl::Retry::kSafe, milliseconds(0), within, sent_at));
  if (!parsed.ok()) return std::move(parsed).error();
  auto validity = field<std::int64_t>(parsed.value(), "validity_ms");
  if (!validity.ok()) return std::move(validity).error();
  lease.renew(ttl, sent_at + milliseconds(validity.value()));
  return Done{};
}

Result<bool> Client::release(const Lease& lease, std::optional<milliseconds> within) {
  json body{{"lease", lease.lease_string()}};
  if (lease.kind() == LeaseKind::kSet) body["names"] = lease.names();
  Clock::time_point sent_at;
  auto parsed = expect_object(impl_->call("DELETE", target_of(lease, false), body.dump(),
                                          Impl::Retry::kSafe, milliseconds(0), within, sent_at));
  if (!parsed.ok()) return std::move(parsed).error();
  if (!parsed->contains("released") || !parsed.value()["released"].is_boolean())
    return make(ErrorCode::kInternal, "the service's answer lacks 'released'");
  return parsed.value()["released"].get<bool>();
}

Result<SemaphoreStatus> semaphore_status_of(const json& body) {
  auto permits = field<std::uint32_t>(body, "permits");
  if (!permits.ok()) return std::move(permits).error();
  auto held = field<std::uint32_t>(body, "held");
  if (!held.ok()) return std::move(held).error();
  return SemaphoreStatus{permits.value(), held.value()};
}

Result<SemaphoreStatus> Client::semaphore_status(std::string_view name) {
  auto parsed = get_status(*impl_, api_paths::kSemaphore, name);
  if (!parsed.ok()) return std::move(parsed).error();
  return semaphore_status_of(parsed.value());
}

namespace {

// A lock's status (GET /v1/locks/{name}) or a watch's answer (`watch`: then `changed`, and no
// `last_token`).
Result<LockStatus> status_of(Result<json> parsed, bool watch) {
  if (!parsed.ok()) return std::move(parsed).error();
  const json& body = parsed.value();
  // A field the answer lacks reads as null (a const json's [] must not be asked for one).
  const auto member = [&body](const char* key) -> const json& {
    static const json absent;
    const auto found = body.find(key);
    return found == body.end() ? absent : *found;
  };
  LockStatus status;
  status.held = body.value("held", false);
  if (member("remaining_ms").is_number_integer())
    status.remaining = milliseconds(member("remaining_ms").get<std::int64_t>());
  if (member("token").is_number_unsigned() && member("token").get<std::uint64_t>() > 0)
    status.token = member("token").get<std::uint64_t>();
  if (member("owner").is_string()) status.owner = member("owner").get<std::string>();
  if (watch) {
    if (!member("changed").is_boolean())
      return make(ErrorCode::kInternal,
                  "the service answered no 'changed': it is older than watch (GET "
                  "/v1/locks/{name}?after_token=T)");
    status.changed = member("changed").get<bool>();
    return status;
  }
  auto last = field<std::uint64_t>(body, "last_token");
  if (!last.ok()) return std::move(last).error();
  status.last_token = last.value();
  return status;
}

}  // namespace

Result<LockStatus> Client::status(std::string_view name) {
  return status_of(get_status(*impl_, api_paths::kLock, name), false);
}

Result<LockStatus> Client::watch(std::string_view name, std::uint64_t after_token,
                                 milliseconds wait) {
  if (auto valid = check_name(name); !valid.ok()) return std::move(valid).error();
  if (wait < milliseconds(0) || wait > milliseconds(3'600'000))
    return make(ErrorCode::kInvalidArgument, "wait must be from 0 to 3600000 ms");
  const std::string target = api_paths::expand(api_paths::kLock, name) +
                             "?after_token=" + std::to_string(after_token) +
                             "&wait_ms=" + std::to_string(wait.count());
  Clock::time_point sent_at;
  // Retries share one deadline: a watch never takes longer than its wait and one round trip.
  const milliseconds within = wait + impl_->options().request_timeout;
  return status_of(
      expect_object(impl_->call("GET", target, {}, Impl::Retry::kSafe, wait, within, sent_at)),
      true);
}

Result<std::uint64_t> Client::next_token(std::string_view name) {
  if (auto valid = check_name(name); !valid.ok()) return std::move(valid).error();
  Clock::time_point sent_at;
  auto parsed =
      expect_object(impl_->call("POST", api_paths::expand(api_paths::kToken, name), {},
                                Impl::Retry::kSafe, milliseconds(0), std::nullopt, sent_at));
  if (!parsed.ok()) return std::move(parsed).error();
  return field<std::uint64_t>(parsed.value(), "token");
}

Result<std::uint64_t> Client::current_token(std::string_view name) {
  if (auto valid = check_name(name); !valid.ok()) return std::move(valid).error();
  Clock::time_point sent_at;
  auto parsed =
      expect_object(impl_->call("GET", api_paths::expand(api_paths::kToken, name), {},
                                Impl::Retry::kSafe, milliseconds(0), std::nullopt, sent_at));
  if (!parsed.ok()) return std::move(parsed).error();
  return field<std::uint64_t>(parsed.value(), "token");
}

}  // namespace fencelock
