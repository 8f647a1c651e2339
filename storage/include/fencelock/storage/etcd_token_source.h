// Fencing tokens from an etcd v3 cluster (Raft): no single point of failure, shared by any number
// of fencelockd instances. Redlock on the lock nodes stays the fast path; etcd only orders.
//
// Contract. Token = base + the etcd revision of a write (a put of clock_key(prefix)), handed out
// only after etcd answered it: a draw that starts after another ended gets a greater token,
// through any fencelockd. Tokens are shared by all names, so a name's tokens jump. Draws waiting
// together share one transaction (up to kMaxBatch names; a name twice goes to the next); one
// request is out at a time, and a failed or late one fails its draws (kUnavailable) and moves to
// the next endpoint. Every draw and read is conditional on history_key(prefix) still holding the
// value the first source wrote ("<128 random bits> <base>"): a wiped cluster fails it, and the
// source refuses for good, as it does for an answer whose revision is below one seen before or
// whose cluster id is not the one met at start. The identity the lock nodes remember is
// "etcd:<cluster id>:<history id>". current(name) = base + etcd's revision now: at or above every
// token handed out so far, below every later draw, never 0. Why, and the gap an instance started
// only after a restore leaves: docs/architecture.md, "etcd revisions".
//
// Threading: thread-safe; callbacks run on the source's strand.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "fencelock/storage/node_address.h"
#include "fencelock/storage/result.h"
#include "fencelock/storage/token_source.h"

namespace fencelock::storage {

struct EtcdTokenOptions {
  // The members' client URLs' host:port (plain HTTP). 1..15; tried in order, then round robin.
  std::vector<NodeAddress> endpoints;
  // Deadline of one request (connect included). Default 1 s; 1 ms .. 60 s. A draw fails within
  // about twice this (the request before it, then its own).
  std::chrono::milliseconds timeout{1000};
  // The source's keys: history_key() and clock_key() of it. 1..128 bytes.
  std::string key_prefix = "fencelock/token/";
  // Draws waiting at most (more: kUnavailable at once). 1 .. 1,000,000.
  std::size_t max_queued = 100'000;
  // Tokens are above this, for moving to etcd from a source whose tokens are larger (docs/
  // operations.md). It is stored with the history when the prefix is first used; later, a floor
  // above what the prefix's history hands out refuses to start. 0 .. 2^62.
  std::uint64_t floor = 0;
};

// The key under which a prefix's token history lives: a lock name cannot hold '#'.
std::string history_key(std::string_view key_prefix);
// The key every draw writes: its revisions are the tokens.
std::string clock_key(std::string_view key_prefix);

class EtcdTokenSource final : public TokenSource {
 public:
  static constexpr std::size_t kMaxBatch = 4096;  // draws (or reads) sharing one transaction

  // Creates or reads the prefix's history with a blocking round trip (this runs at startup,
  // before anything is served), then serves on a strand of `executor`.
  // Errors: kInvalidArgument (options, or a floor the prefix's history cannot honour),
  // kUnavailable (no endpoint answered; the message says what each said), kInternal (the history
  // key holds something fencelock did not write).
  static Result<std::shared_ptr<EtcdTokenSource>> create(
      const boost::asio::any_io_executor& executor, EtcdTokenOptions options);
  ~EtcdTokenSource() override;

  // "etcd:<cluster id>:<history id>": the lock nodes remember it (instance_registry.h).
  const std::string& identity() const noexcept;

  // Whether the source found that etcd went back (History above) and hands out nothing any more.
  // Safe from any thread.
  bool broken() const noexcept;

  // Fails every waiting draw with kUnavailable and every later one too. Called by the destructor.
  void stop() override;

  // Errors: kUnavailable (no member answered in time, no leader, too many draws waiting, another
  // cluster behind the endpoint, etcd went back — see History above), kInternal (an answer that is
  // not etcd's), kInvalidArgument.
  void next(std::string_view name, Callback done) override;
  void current(std::string_view name, Callback done) override;
  // Does nothing: a token is etcd's revision, one counter for every name, which only writes move.
  void skip_past(std::string_view, std::uint64_t) override {}
  // True when a token was drawn under the prefix's history before this source started.
  bool has_history() const override;
  // kGlobal, "etcd", shared_id identity().
  TokenTraits traits() const override;
  bool ready() const override { return !broken(); }

  class Impl;

 private:
  explicit EtcdTokenSource(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace fencelock::storage
