// One page of a listing: LockEngine::list, list_semaphores, list_rwlocks. The lock nodes are
// scanned one after another, in the configured order (SCAN, bounded work per step, for this
// engine's keys with the prefix that end as the ListKind's keys do: lock keys, semaphores' config
// keys, read/write locks' state keys). Each step's names (those the caller may see) are inspected
// on every node by the kind, which answers for each name the nodes holding each of its grants that
// a quorum holds; a name is listed when the scanned node is the first of one grant's holders the
// listing may list from. So a name on which one grant stays held throughout a listing is listed
// when the first node holding that grant is scanned (a grant's holders only ever shrink), whatever
// the others hold; a name whose grants are held on different nodes may be listed from each grant's
// first holder. A node that does not vote at its turn, or fails its scan or an inspection of its
// own step, is *passed over* for the rest of the listing: names it holds are listed from their next
// holder instead (some may be listed twice: a listing is at-least-once). The listing ends once
// more than N - Q nodes were scanned (not passed over): every quorum holds one of them. The
// cursor is "<node>-<SCAN cursor>-<passed-over nodes, a hex bit mask>-<the node's incarnation>"
// (the first 12 characters of its run_id): a SCAN cursor means nothing to another incarnation
// (Redis seeds its hash anew at each start), so a node that restarted is scanned again from the
// start. Each SCAN step and its inspections run through the engine's ListPacer (list_pacer.h); a
// page ends after at most 16 steps, or once it made one and took a second (it may then hold fewer
// names than its limit, or none); when the pacer's queue is full the page is kUnavailable.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine_core.h"
#include "engine/script_operation.h"
#include "fencelock/storage/lease.h"

namespace fencelock::storage {

// What one step of a listing learned about its names on every node.
struct StepInspection {
  std::uint32_t answered = 0;  // the nodes that answered for every name (bit i: node i)
  // By name, in order: the nodes holding each of its grants held on a quorum (none: not held).
  std::vector<std::vector<std::uint32_t>> held_on;
  // Set when a name (the first such) has a grant that the nodes which answered hold on fewer
  // than a quorum but could with those that did not: the page cannot tell it is not held.
  std::optional<Error> maybe_held;
};

// What a listing lists (engine/list_kinds.h): which keys it scans for, how one step's names are
// inspected, and the page it fills. Used on the strand only.
class ListKind {
 public:
  virtual ~ListKind() = default;
  // What the scanned keys end with ("" for locks); a name is what lies between the engine's key
  // prefix and it.
  virtual std::string_view key_suffix() const = 0;
  // Inspects `names` on every node; `done` (on the strand) gets what the step learned, or an
  // error: kUnavailable, also when the nodes that did not answer could hold a name.
  virtual void inspect(const std::shared_ptr<EngineCore>& core, std::vector<std::string> names,
                       std::function<void(Result<StepInspection>)> done) = 0;
  // Moves the `i`-th name of the last inspection, with what it learned, into the page.
  virtual void keep(std::size_t i) = 0;
  virtual std::size_t kept() const = 0;  // names in the page so far
};

class ListOperation : public ReplySink, public std::enable_shared_from_this<ListOperation> {
 public:
  // `request` as checked by check_list_request(). `done` gets the next page's cursor ("" once the
  // listing is complete; the page itself is the kind's) or an error.
  ListOperation(std::shared_ptr<EngineCore> core, ListRequest request,
                std::shared_ptr<ListKind> kind, std::function<void(Result<std::string>)> done);

  // Why `request` cannot be listed (kInvalidArgument), or Ok. On any thread.
  static Status check_list_request(const ListRequest& request, std::size_t node_count);

  void start();  // on the strand

 private:
  void scan();      // the next step, once the pacer lets it run
  void scan_now();  // the step itself: a SCAN of node_
  void end_step();  // the step ended (no-op outside one): the pacer may run the next
  void on_reply(std::size_t node, std::uint32_t cookie, NodeReply reply) override;
  void on_inspected(Result<StepInspection> inspection);
  // The first holder of a grant (`nodes`) not passed over: where the listing lists it from.
  std::size_t listed_from(std::uint32_t nodes) const;
  void next_step();  // after a step: the next SCAN, the next node, or the page is done
  void pass_over();  // the scanned node failed: on to the next one, without it from now on
  void next_node();
  // The nodes scanned so far (not passed over) meet every quorum: the listing can end.
  bool quorums_covered() const;
  void scan_or_end_page();  // the next SCAN of this node, unless the page is full: then it ends
  bool page_full() const;
  std::string cursor() const;
  void finish(Result<std::string> next);

  std::shared_ptr<EngineCore> core_;
  ListRequest request_;
  std::shared_ptr<ListKind> kind_;
  std::function<void(Result<std::string>)> done_;
  std::string pattern_;  // SCAN MATCH: this engine's keys of the kind with the prefix
  std::size_t node_ = 0;
  std::string cursor_ = "0";
  std::string run_;  // the incarnation of node_ that cursor_ belongs to ("" unknown)
  bool in_step_ = false;
  std::uint32_t passed_over_ = 0;  // bit i: node i is passed over (kMaxLockNodes < 32)
  std::size_t steps_ = 0;
  std::chrono::steady_clock::time_point page_started_;
};

}  // namespace fencelock::storage
