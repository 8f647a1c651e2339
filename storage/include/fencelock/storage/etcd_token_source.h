// Fencing tokens from an etcd v3 cluster (Raft): no single point of failure, shared by any number
// of fencelockd instances. Redlock on the lock nodes stays the fast path; etcd only orders.
//
// Token = the etcd revision of a write to the name's key (<key_prefix><name>). etcd's revision is
// cluster-wide, linearizable and never goes back, whatever member fails or leads, so a draw that
// starts after another one ended gets a greater token, through any fencelockd. A token is handed
// out only after etcd answered the write (committed on a majority of members, fsynced). Tokens
// are shared by all names, so they jump (5, then 9 for the same name): fine for fencing, which
// only compares.
//
// Batching: draws that arrive while a request is out share the next transaction — one Raft round
// for up to kMaxBatch names; a name drawn twice goes to the following batch (one revision per
// transaction). One request is out at a time per source.
//
// Fail-over: the source talks to one endpoint at a time; a failed or late request fails its draws
// (kUnavailable — the acquire answers 503 and the client may retry) and moves to the next
// endpoint. Every answer's cluster id must be the one the source met at start: an endpoint that
// now belongs to another etcd cluster (a misdirected address) could hold smaller revisions, so
// its answers are refused. Known gap: etcd derives its cluster id from the bootstrap flags, so a
// cluster wiped and bootstrapped again, restored from a snapshot, or recovered with
// --force-new-cluster keeps its id while its revisions go back — not detected yet
// (docs/operations.md says never to do that to the token cluster).
//
// current(name) = the key's mod_revision (a linearizable range read), 0 if never drawn.
//
// Threading: thread-safe; callbacks run on the source's strand.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "fencelock/storage/engine_options.h"
#include "fencelock/storage/result.h"
#include "fencelock/storage/token_source.h"

namespace fencelock::storage {

struct EtcdTokenOptions {
  // The members' client URLs' host:port (plain HTTP). 1..15; tried in order, then round robin.
  std::vector<NodeAddress> endpoints;
  // Deadline of one request (connect included). Default 1 s; 1 ms .. 60 s. A draw fails within
  // about twice this (the request before it, then its own).
  std::chrono::milliseconds timeout{1000};
  // Keys are <key_prefix><name>. 1..128 bytes.
  std::string key_prefix = "fencelock/token/";
  // Draws waiting at most (more: kUnavailable at once). 1 .. 1,000,000.
  std::size_t max_queued = 100'000;
};

class EtcdTokenSource final : public TokenSource {
 public:
  static constexpr std::size_t kMaxBatch = 128;  // etcd's default --max-txn-ops

  // Asks the endpoints for the cluster's id with a blocking round trip (this runs at startup,
  // before anything is served), then serves on a strand of `executor`.
  // Errors: kInvalidArgument (options), kUnavailable (no endpoint answered; the message says
  // what each said).
  static Result<std::shared_ptr<EtcdTokenSource>> create(
      const boost::asio::any_io_executor& executor, EtcdTokenOptions options);
  ~EtcdTokenSource() override;

  // "etcd:<cluster id>": the lock nodes remember it (instance_registry.h).
  const std::string& identity() const noexcept;

  // Fails every waiting draw with kUnavailable and every later one too. Called by the destructor.
  void stop();

  // Errors: kUnavailable (no member answered in time, no leader, too many draws waiting, another
  // cluster behind the endpoint), kInternal (an answer that is not etcd's), kInvalidArgument.
  void next(std::string_view name, Callback done) override;
  void current(std::string_view name, Callback done) override;

  class Impl;

 private:
  explicit EtcdTokenSource(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace fencelock::storage
