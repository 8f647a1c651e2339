// Settings of the Redlock engine: one aggregate, one documented default and bound per field.
// validate_engine_options() checks every bound once, before the engine is built.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fencelock/storage/node_address.h"
#include "fencelock/storage/result.h"
#include "fencelock/storage/token_source.h"

namespace fencelock::storage {

struct EngineOptions {
  // The independent Redis masters holding the locks. 1..15 nodes; an odd count is recommended
  // (an even count tolerates no more failures than the odd count below it). N = 1 is for
  // development only: it has no fault tolerance at all.
  std::vector<NodeAddress> nodes;
  // AUTH on every lock node connection (commands and the release subscriptions).
  RedisCredentials credentials;

  // Deadline of every command on every node. Default 50 ms; 1 ms .. 10 s. A node that is down,
  // paused or slow delays an operation by at most this much; its connection is then replaced.
  std::chrono::milliseconds node_timeout{50};

  // Extra time a new connection gets to connect and finish its handshake. Default 250 ms; 1 ms ..
  // 60 s.
  std::chrono::milliseconds connect_timeout{250};

  // Longest wait for one resolution of a node's DNS name, before every (re)connect. Default 5 s;
  // 1 ms .. 60 s. Unused for IP addresses.
  std::chrono::milliseconds resolve_timeout{5000};

  // Reconnect backoff after a lost connection: starts at the minimum, doubles per failure up to
  // the maximum, ±25% jitter. Defaults 50 ms and 2 s; 1 ms .. 60 s, min <= max.
  std::chrono::milliseconds reconnect_min{50};
  std::chrono::milliseconds reconnect_max{2000};

  // Allowance for Redis clocks running faster than ours, as a fraction of the ttl.
  // Default 0.01; 0 .. 0.5.
  double drift_factor = 0.01;

  // Retry pacing while waiting for a held lock: uniform in [delay − jitter, delay + jitter].
  // Defaults 200 ms ± 100 ms (the reference implementations'); 0 .. 60 s each.
  std::chrono::milliseconds retry_delay{200};
  std::chrono::milliseconds retry_jitter{100};

  // Accepted lease ttls. Defaults 10 ms .. 1 h; min >= 1 ms, min <= max <= 24 h. max_ttl also sets
  // the quarantine of a restarted node.
  std::chrono::milliseconds min_ttl{10};
  std::chrono::milliseconds max_ttl{3'600'000};

  // Longest wait an acquire may ask for. Default 60 s; 0 .. 1 h.
  std::chrono::milliseconds max_wait{60'000};

  // Keep a node that may have lost keys (it restarted without durable persistence) from voting
  // until every lease it could have held has expired — across instances and their restarts; see
  // node_trust.h and docs/architecture.md. Default on. Nodes with appendfsync always are never
  // quarantined anyway; turning this off trusts every node as soon as it answers.
  bool quarantine_restarted_nodes = true;

  // The operator says the lock nodes are new (a planned move to empty nodes while no lease is
  // held): nodes that all answer without any history vote at once even though the token store
  // has a history. Without it such nodes wait out the longest ttl any instance may grant (24 h
  // when no node remembers it). Default off; meant for one start.
  bool new_lock_nodes = false;

  // The operator says no lock node lost its data since a fencelock version that recorded one
  // admission for every key prefix last ran (an upgrade): where this prefix has no admission of
  // its own on a node, the older one is taken as this prefix's (lua_scripts.h, the node marker).
  // Without it such nodes are trusted only by their uptime and a fence repair. Default off;
  // meant for the first start after the upgrade.
  bool adopt_legacy_markers = false;

  // Prefix of every lock key: key = prefix + name. Default "fencelock:lock:"; at most 64 bytes,
  // without '#' (it marks the keys every deployment shares).
  std::string key_prefix = "fencelock:lock:";

  // Empty (the default): the token source is shared by every instance on these lock nodes (Redis
  // INCR), or there is none. Otherwise the id of a token store only this process draws from (the
  // embedded SQLite file): the engine then refuses to grant — kUnavailable, saying why — while
  // another fencelockd is registered on the lock nodes, or until it has checked (at start, and
  // again after a pause). At most 128 bytes, no spaces.
  std::string exclusive_tokens;

  // The id of a shared token source that has one of its own ("etcd:<cluster id>"), which the lock
  // nodes remember like any token store (instance_registry.h); empty: "shared" (the Redis token
  // master). Ignored when exclusive_tokens is set. At most 128 bytes, no spaces.
  std::string shared_tokens;

  // How the source's tokens compare across names and restarts, which decides what the lock nodes'
  // token mark can check (instance_registry.h: the nodes remember the highest token handed out
  // through them; a token store restored from a backup would otherwise hand out tokens again).
  //   kPerName: only a name's own tokens are ordered (the Redis source): no check.
  //   kAboveRestart: every token drawn after the source opened is above every token handed out
  //     before, whatever the name (the SQLite file starts above its durable reservation). A token
  //     not above the mark the nodes held when the engine became ready is refused, for good.
  //   kGlobal: every token is above every token handed out before its draw started, whatever the
  //     name (etcd's revision). A token not above the mark the engine knew when its draw started
  //     is refused, for good.
  using TokenOrder = TokenTraits::Order;
  TokenOrder token_order = TokenOrder::kPerName;
};

// The first option out of bounds: the fields concerned (as named in EngineOptions; two for a
// bound between fields, "min_ttl" and "max_ttl") and what is wrong with them ("must be ...").
struct OptionProblem {
  std::vector<std::string_view> fields;
  std::string reason;
};
std::optional<OptionProblem> find_option_problem(const EngineOptions& options);

// Checks every field against its bounds. Errors: kInvalidArgument, "<fields>: <reason>".
Status validate_engine_options(const EngineOptions& options);

}  // namespace fencelock::storage
