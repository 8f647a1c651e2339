#include "api/api_handlers.h"

#include <algorithm>
#include <mutex>
#include <nlohmann/json.hpp>

#include "api/answer_json.h"
#include "api/handler_support.h"
#include "api/lease_codec.h"
#include "api/openapi_document.h"
#include "fencelock/api_paths.h"
#include "fencelock/names.h"
#include "ops/log.h"
#include "ops/metrics.h"

namespace fencelock::service {

namespace {

using nlohmann::json;
using namespace handler_support;

// Written by hand (answer_json.h): the hot answers' JSON without nlohmann's DOM.
std::string lease_body(const std::string& name, const std::string& lease, std::uint64_t token,
                       std::chrono::milliseconds ttl, std::chrono::milliseconds validity,
                       std::optional<std::chrono::milliseconds> waited = std::nullopt) {
  return lease_answer_json(name, lease, token, ttl, validity, waited);
}

ApiResponse denial_response(const Authorizer::Decision& decision) {
  std::optional<std::int64_t> retry_after_ms;
  if (decision.retry_after) retry_after_ms = decision.retry_after->count();
  ApiResponse response =
      ApiHandlers::error_response(decision.error, decision.message, retry_after_ms);
  if (decision.retry_after) response.retry_after_s = (decision.retry_after->count() + 999) / 1000;
  response.authenticate = decision.error == ApiError::kUnauthenticated;
  response.log.key = decision.key_id;
  return response;
}

}  // namespace

ApiHandlers::ApiHandlers(storage::LockEngine& engine, std::shared_ptr<storage::TokenSource> tokens,
                         MetricsRenderer metrics, const Authorizer* authorizer)
    : engine_(engine),
      tokens_(std::move(tokens)),
      token_backend_(tokens_ != nullptr ? tokens_->traits().backend : std::string()),
      metrics_(std::move(metrics)),
      authorizer_(authorizer),
      limits_{engine.options().min_ttl, engine.options().max_ttl, engine.options().max_wait} {}

const ApiHandlers::RouteTable& ApiHandlers::routes() {
  namespace paths = api_paths;
  using A = ApiHandlers;
  // The first fitting row wins: "/v1/locks/{name}/extend" before "/v1/locks/{name}".
  static const RouteTable table{{
      {Route::kExtend, Method::kPost, paths::kLockExtend, "extend", kRightLock, false, false,
       &A::extend},
      {Route::kRevoke, Method::kPost, paths::kLockRevoke, "revoke", kRightAdmin, false, false,
       &A::revoke},
      {Route::kAcquire, Method::kPost, paths::kLock, "acquire", kRightLock, false, false,
       &A::acquire},
      {Route::kRelease, Method::kDelete, paths::kLock, "release", kRightLock, false, false,
       &A::release},
      {Route::kLockStatus, Method::kGet, paths::kLock, "lock_status", kRightRead, false, false,
       &A::lock_status},
      {Route::kNextToken, Method::kPost, paths::kToken, "next_token", kRightToken, false, false,
       &A::next_token},
      {Route::kCurrentToken, Method::kGet, paths::kToken, "current_token", kRightRead, false, false,
       &A::current_token},
      {Route::kHealthz, Method::kGet, paths::kHealthz, "healthz", 0, false, true, &A::healthz},
      {Route::kReadyz, Method::kGet, paths::kReadyz, "readyz", 0, false, true, &A::readyz},
      {Route::kMetrics, Method::kGet, paths::kMetrics, "metrics", 0, false, true, &A::metrics},
      {Route::kOpenApi, Method::kGet, paths::kOpenApi, "openapi", 0, false, false, &A::openapi},
      {Route::kAcquireSet, Method::kPost, paths::kLockSet, "acquire_set", kRightLock, true, false,
       &A::acquire_set},
      {Route::kListLocks, Method::kGet, paths::kLockSet, "list_locks", kRightRead, false, false,
       &A::list_locks},
      {Route::kReleaseSet, Method::kDelete, paths::kLockSet, "release_set", kRightLock, true, false,
       &A::release_set},
      {Route::kExtendSet, Method::kPost, paths::kLockSetExtend, "extend_set", kRightLock, true,
       false, &A::extend_set},
      {Route::kExtendPermit, Method::kPost, paths::kSemaphoreExtend, "extend_permit", kRightLock,
       false, false, &A::extend_permit},
      {Route::kAcquirePermit, Method::kPost, paths::kSemaphore, "acquire_permit", kRightLock, false,
       false, &A::acquire_permit},
      {Route::kReleasePermit, Method::kDelete, paths::kSemaphore, "release_permit", kRightLock,
       false, false, &A::release_permit},
      {Route::kSemaphoreStatus, Method::kGet, paths::kSemaphore, "semaphore_status", kRightRead,
       false, false, &A::semaphore_status},
      {Route::kExtendRw, Method::kPost, paths::kRwLockExtend, "extend_rwlock", kRightLock, false,
       false, &A::extend_rw},
      {Route::kAcquireRw, Method::kPost, paths::kRwLock, "acquire_rwlock", kRightLock, false, false,
       &A::acquire_rw},
      {Route::kReleaseRw, Method::kDelete, paths::kRwLock, "release_rwlock", kRightLock, false,
       false, &A::release_rw},
      {Route::kRwLockStatus, Method::kGet, paths::kRwLock, "rwlock_status", kRightRead, false,
       false, &A::rwlock_status},
      {Route::kListSemaphores, Method::kGet, paths::kSemaphoreList, "list_semaphores", kRightRead,
       false, false, &A::list_semaphores},
      {Route::kListRwLocks, Method::kGet, paths::kRwLockList, "list_rwlocks", kRightRead, false,
       false, &A::list_rwlocks},
  }};
  return table;
}

const ApiHandlers::RouteEntryType* ApiHandlers::route_entry(Route route) noexcept {
  for (const RouteEntryType& entry : routes()) {
    if (entry.route == route) return &entry;
  }
  return nullptr;
}

bool ApiHandlers::is_probe(Method method, std::string_view target) noexcept {
  const std::string_view path = origin_path(target);
  return std::any_of(routes().begin(), routes().end(), [&](const RouteEntryType& entry) {
    return entry.probe && entry.method == method && entry.pattern == path;
  });
}

std::string_view route_label(Route route) noexcept {
  const auto* entry = ApiHandlers::route_entry(route);
  return entry != nullptr ? entry->label : "not_found";
}

ApiHandlers::Screened ApiHandlers::screen(Method method, std::string_view target,
                                          std::string_view authorization) const {
  Screened screened;
  if (method == Method::kHead) {
    // No HEAD in API v1; answered without a body (a HEAD response carries none), then closed.
    ApiResponse response = error_response(ApiError::kMethodNotAllowed, "HEAD is not supported");
    response.body.clear();
    response.allow = "GET, POST, DELETE";
    response.close = true;
    screened.answer = std::move(response);
    return screened;
  }
  const auto match = match_route(routes(), method, target);
  using Kind = RouteMatch<Handler>::Kind;
  switch (match.kind) {
    case Kind::kNotFound:
      screened.answer = error_response(ApiError::kNotFound, "no such endpoint");
      return screened;
    case Kind::kBadName:  // counted and logged under the route it was meant for
      screened.route = match.entry->route;
      screened.answer = error_response(ApiError::kInvalidRequest, fencelock::kLockNameRule);
      return screened;
    case Kind::kMethodNotAllowed: {
      const std::string_view name = method_name(method);
      ApiResponse response = error_response(
          ApiError::kMethodNotAllowed,
          (name.empty() ? std::string("this method") : std::string(name)) + " is not allowed here");
      response.allow = match.allow;
      screened.answer = std::move(response);
      return screened;
    }
    case Kind::kFound:
      break;
  }
  screened.route = match.entry->route;
  screened.name = match.name;
  if (const auto mark = target.find('?'); mark != std::string_view::npos)
    screened.query = target.substr(mark + 1);
  screened.entry = static_cast<std::size_t>(match.entry - routes().data());
  screened.authorization = authorization;
  // A lock set's names are in its body: the key is found, its right checked and its rate taken
  // now; its names are checked once the body is read (dispatch()).
  const std::uint8_t right = match.entry->right;
  if (authorizer_ == nullptr) {
    screened.decision.allowed = true;
  } else if (!names_in_path(*match.entry)) {  // a lock set's body, a listing's answer
    screened.decision = authorizer_->authenticate(right, authorization, Authorizer::Clock::now());
  } else {
    screened.decision =
        authorizer_->check(right, match.name, authorization, Authorizer::Clock::now());
  }
  if (!screened.decision.allowed) screened.answer = denial_response(screened.decision);
  return screened;
}

ApiHandlers::Dispatched ApiHandlers::dispatch(Method method, std::string_view target,
                                              std::string_view body, std::string_view authorization,
                                              Reply reply) {
  const Screened screened = screen(method, target, authorization);
  if (screened.answer) {
    reply(*screened.answer);
    return Dispatched{screened.route, screened.name, nullptr};
  }
  return dispatch(screened, body, std::move(reply));
}

ApiHandlers::Dispatched ApiHandlers::dispatch(const Screened& screened, std::string_view body,
                                              Reply reply) {
  Dispatched dispatched{screened.route, screened.name, nullptr};
  if (screened.answer) {
    reply(*screened.answer);
    return dispatched;
  }
  const RouteEntryType& entry = routes()[screened.entry];
  const Authorizer::Decision* decision = &screened.decision;
  Authorizer::Decision again;  // the keys were reloaded while the body arrived: decided anew
  if (authorizer_ != nullptr && authorizer_->replaced_since(screened.decision)) {
    again = authorizer_->identify(entry.right, screened.authorization);
    if (names_in_path(entry)) again = Authorizer::check_name(again, screened.name);
    if (!again.allowed) {
      reply(denial_response(again));
      return dispatched;
    }
    decision = &again;
  }
  // A lock set's names are in its body; the key needs its right on every one of them.
  if (entry.names_in_body) {
    auto names = parse_set_names(body);
    if (!names.ok()) {
      reply(bad_request(names.error()));
      return dispatched;
    }
    if (authorizer_ != nullptr) {
      const Authorizer::Decision checked = Authorizer::check_names(*decision, names.value());
      if (!checked.allowed) {
        reply(denial_response(checked));
        return dispatched;
      }
    }
  }
  const std::string& key_id = decision->key_id;
  if (!key_id.empty()) {  // the audit trail: every answer's log line names the key
    reply = [reply = std::move(reply), key = key_id](ApiResponse response) {
      response.log.key = key;
      reply(std::move(response));
    };
  }
  // The one catch per request: a surprise becomes a 500 and a log line, never a dead server. The
  // handler may have handed `reply` on before it threw, so the 500 goes through a copy; should the
  // handed-on one answer too, the connection keeps only the first answer.
  const Reply fallback = reply;
  try {
    const Call call{screened.name,   body,           key_id,
                    decision->usage, screened.query, authorizer_ ? decision : nullptr};
    dispatched.cancel = (this->*(entry.handler))(call, std::move(reply));
  } catch (const std::exception& e) {
    log_event(LogLevel::kError, "internal_error",
              {{"route", route_label(dispatched.route)}, {"what", e.what()}});
    fallback(error_response(ApiError::kInternal, "internal error"));
  }
  return dispatched;
}

ApiHandlers::Cancel ApiHandlers::acquire(const Call& call, Reply reply) {
  auto parsed = parse_acquire_body(call.body, limits_);
  if (!parsed.ok()) return answer(reply, bad_request(parsed.error()));
  return take_lock(call, parsed.value(), /*revoke=*/false, std::move(reply));
}

ApiHandlers::Cancel ApiHandlers::revoke(const Call& call, Reply reply) {
  auto parsed = parse_revoke_body(call.body, limits_);
  if (!parsed.ok()) return answer(reply, bad_request(parsed.error()));
  return take_lock(call, parsed.value(), /*revoke=*/true, std::move(reply));
}

ApiHandlers::Cancel ApiHandlers::take_lock(const Call& call, const AcquireBody& body, bool revoke,
                                           Reply reply) {
  const std::string name(call.name);
  const AcquireBody* parsed = &body;
  std::string owner_detail = parsed->owner;
  const bool waits = parsed->wait.count() > 0;
  const std::string owner(call.owner);
  // The key's caps (auth/key_usage.h): a waiter slot and a lock slot, given back on every outcome.
  auto pending = PendingAcquire::begin(call.usage, owner, waits, 1, waiting_acquires_);
  if (!pending.ok()) return answer(reply, std::move(pending).error());
  storage::AcquireRequest request{name,  parsed->ttl,  parsed->wait,
                                  owner, owner_detail, parsed->request_id};
  storage::AcquireTicket ticket;
  try {  // the handler runs exactly once, unless the call throws: then nothing runs it
    auto take = revoke ? &storage::LockEngine::revoke : &storage::LockEngine::acquire;
    ticket = (engine_.*take)(
        std::move(request), [this, name, owner, owner_detail, usage = call.usage,
                             pending = pending.value(), named = !parsed->request_id.empty(),
                             reply = std::move(reply)](EngineResult<storage::Lease> lease) mutable {
          // A refusal (409 locked) carries retry_after_ms from the engine's own answers.
          if (!lease.ok()) {
            pending.refused();
            return reply(from_storage_error(lease.error()));
          }
          pending.granted(name, lease->token, lease->started + lease->ttl);
          std::string answer = lease_body(name, encode_lease(lease->token, lease->proof),
                                          lease->token, lease->ttl, lease->validity, lease->waited);
          if (lease->repeated) answer.insert(answer.size() - 1, R"(,"repeated":true)");
          ApiResponse response = ok_json_text(std::move(answer), lease->token);
          response.log.owner = owner_detail;
          response.log.repeated = lease->repeated;
          // Granted, but the client is gone: release at once rather than hold the name for the ttl
          // — unless its request was repeated meanwhile: the repeat's client may hold it now.
          response.undelivered =
              [this, name, usage,
               claim = storage::LeaseClaim{lease->token, lease->proof, owner, named}] {
                if (usage) usage->drop(usage_key(name, claim.token));
                engine_.release(name, claim, [](const EngineResult<bool>&) {});
              };
          reply(std::move(response));
        });
  } catch (...) {
    pending->refused();
    throw;
  }
  if (!waits) return {};  // one attempt: answered within about one node timeout anyway
  return [ticket] { ticket.cancel(); };
}

ApiHandlers::Cancel ApiHandlers::extend(const Call& call, Reply reply) {
  const std::string name(call.name);
  auto parsed = parse_extend_body(call.body, limits_);
  if (!parsed.ok()) return answer(reply, bad_request(parsed.error()));
  auto claim = decode_lease(parsed->lease);
  if (!claim) return answer(reply, error_response(ApiError::kInvalidRequest, "lease is malformed"));
  claim->owner = std::string(call.owner);
  // The answer's token and lease come from what the nodes verified, never from the request alone.
  engine_.extend(
      name, *claim, parsed->ttl,
      [name, proof = claim->proof, owner = claim->owner, usage = call.usage,
       reply = std::move(reply)](EngineResult<storage::Extension> extension) {
        if (!extension.ok()) return reply(claim_error(extension.error(), owner));
        if (usage) {
          usage->renew(usage_key(name, extension->token), extension->started + extension->ttl);
        }
        std::string body = lease_body(name, encode_lease(extension->token, proof), extension->token,
                                      extension->ttl, extension->validity);
        reply(ok_json_text(std::move(body), extension->token));
      });
  return {};
}

ApiHandlers::Cancel ApiHandlers::release(const Call& call, Reply reply) {
  const std::string name(call.name);
  auto parsed = parse_release_body(call.body);
  if (!parsed.ok()) return answer(reply, bad_request(parsed.error()));
  auto claim = decode_lease(parsed->lease);
  if (!claim) return answer(reply, error_response(ApiError::kInvalidRequest, "lease is malformed"));
  claim->owner = std::string(call.owner);
  std::string owner = claim->owner;
  const std::uint64_t token = claim->token;
  engine_.release(name, std::move(*claim),
                  [name, owner = std::move(owner), token, usage = call.usage,
                   reply = std::move(reply)](EngineResult<bool> released) {
                    if (!released.ok()) return reply(claim_error(released.error(), owner));
                    if (usage) usage->drop(usage_key(name, token));  // released, or already gone
                    reply(ok_json_text(released_answer_json(name, released.value())));
                  });
  return {};
}

ApiHandlers::Cancel ApiHandlers::next_token(const Call& call, Reply reply) {
  const std::string name(call.name);
  // The same counters as the grants: an embedded source may not draw while another instance runs.
  if (auto refusal = engine_.grant_refusal())
    return answer(reply, error_response(ApiError::kUnavailable, *refusal));
  // Fenced like a grant's token, and the verdict checked again after the draw, by the engine.
  engine_.draw_token(name, [name, reply = std::move(reply)](EngineResult<std::uint64_t> token) {
    if (!token.ok()) return reply(from_storage_error(token.error()));
    reply(ok(json{{"name", name}, {"token", token.value()}}, token.value()));
  });
  return {};
}

ApiHandlers::Cancel ApiHandlers::current_token(const Call& call, Reply reply) {
  const std::string name(call.name);
  // A token store that went back (or that this instance may not use) shows no current token: it
  // could be below tokens already handed out.
  tokens_->current(name, [check = engine_.current_check(), name,
                          reply = std::move(reply)](EngineResult<std::uint64_t> token) {
    if (!token.ok()) return reply(from_storage_error(token.error()));
    if (auto refusal = check(token.value())) {
      return reply(error_response(ApiError::kUnavailable, *refusal));
    }
    reply(ok(json{{"name", name}, {"token", token.value()}}));
  });
  return {};
}

ApiHandlers::Cancel ApiHandlers::healthz(const Call&, Reply reply) {
  return answer(reply, ok(json{{"status", "ok"}}));
}

ApiHandlers::Cancel ApiHandlers::metrics(const Call&, Reply reply) {
  ApiResponse response;
  response.body = metrics_ ? metrics_() : std::string();
  response.content_type = kMetricsContentType;
  return answer(reply, std::move(response));
}

ApiHandlers::Cancel ApiHandlers::openapi(const Call&, Reply reply) {
  ApiResponse response;
  response.body = std::string(openapi_document_json());
  return answer(reply, std::move(response));
}

namespace {

// One lock node for /readyz: its state, and what it waits for.
json node_state_json(const storage::NodeStatus& node) {
  json entry{{"node", node.address}};
  if (!node.refused.empty()) {
    entry["state"] = "refused";
    entry["reason"] = node.refused;
  } else if (node.unresolved) {
    entry["state"] = "unresolved";
  } else if (!node.up) {
    entry["state"] = "unreachable";
  } else if (node.quarantined && node.unjudged && node.votes_again_in) {
    entry["state"] = "checking";
    entry["judged_within_ms"] = node.votes_again_in->count();
  } else if (node.quarantined && node.votes_again_in) {
    entry["state"] = "quarantined";
    entry["votes_again_in_ms"] = node.votes_again_in->count();
  } else if (node.quarantined) {
    entry["state"] = "repairing";
  } else {
    entry["state"] = "voting";
  }
  return entry;
}

}  // namespace

ApiHandlers::ReadyState ApiHandlers::ready_state() const {
  ReadyState state;
  state.voting = engine_.voting_nodes();
  state.total = engine_.node_count();
  state.quorum = engine_.quorum();
  state.nodes_ok = state.voting >= state.quorum;
  state.refusal = engine_.grant_refusal();
  state.tokens_ok = (tokens_ == nullptr || tokens_->ready()) && !state.refusal;
  return state;
}

std::string ApiHandlers::ReadyState::summary() const {
  std::string text = ready() ? "ready: " : "not ready: ";
  text += std::to_string(voting) + " of " + std::to_string(total) + " lock nodes vote";
  if (!nodes_ok) text += " (" + std::to_string(quorum) + " needed)";
  if (refusal) {
    text += "; " + *refusal;
  } else if (!tokens_ok) {
    text += "; the token source is not ready";
  }
  return text;
}

ApiHandlers::Cancel ApiHandlers::readyz(const Call&, Reply reply) {
  const ReadyState state = ready_state();
  json token_source{{"status", state.tokens_ok ? "ok" : "unavailable"},
                    {"backend", token_backend_}};
  json refused = json::array();
  json nodes = json::array();
  for (const storage::NodeStatus& node : engine_.node_statuses()) {
    if (!node.refused.empty())
      refused.push_back({{"node", node.address}, {"reason", node.refused}});
    nodes.push_back(node_state_json(node));
  }
  if (state.refusal) token_source["reason"] = *state.refusal;
  json body{{"status", state.ready() ? "ok" : "unavailable"},
            {"lock_nodes",
             {{"status", state.nodes_ok ? "ok" : "unavailable"},
              {"voting", state.voting},
              {"total", state.total},
              {"quorum", state.quorum},
              {"unresolved", engine_.unresolved_nodes()},
              {"refused", std::move(refused)},
              {"nodes", std::move(nodes)}}},
            {"token_source", std::move(token_source)}};
  ApiResponse response = ok(body);
  if (!state.ready()) response.status = 503;
  return answer(reply, std::move(response));
}

}  // namespace fencelock::service
