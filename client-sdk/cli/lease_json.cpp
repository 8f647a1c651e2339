#include "lease_json.h"

namespace fencelock::cli {

using nlohmann::json;

json lease_identity_json(const Lease& lease) {
  switch (lease.kind()) {
    case LeaseKind::kSet:
      return json{{"names", lease.names()}};
    case LeaseKind::kPermit:
      return json{{"name", lease.name()}, {"permits", lease.permits()}, {"slot", lease.slot()}};
    case LeaseKind::kRead:
    case LeaseKind::kWrite:
      return json{{"name", lease.name()},
                  {"mode", lease.kind() == LeaseKind::kWrite ? "write" : "read"}};
    case LeaseKind::kLock:
      break;
  }
  return json{{"name", lease.name()}};
}

json held_json(const Lease& lease) {
  json body = lease_identity_json(lease);
  if (lease.kind() == LeaseKind::kSet) {
    json tokens = json::object();
    for (std::size_t i = 0; i < lease.names().size(); ++i)
      tokens[lease.names()[i]] = lease.tokens()[i];
    body["tokens"] = std::move(tokens);
  } else {
    body["token"] = lease.token();
  }
  body["ttl_ms"] = lease.ttl().count();
  return body;
}

json acquired_json(const Lease& lease) {
  json body = held_json(lease);
  body["lease"] = lease.lease_string();
  body["validity_ms"] = lease.remaining().count();
  return body;
}

}  // namespace fencelock::cli
