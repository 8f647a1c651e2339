// One page of LockEngine::list. The lock nodes are scanned one after another, in the configured
// order (SCAN, bounded work per step, for this engine's lock keys with the prefix; fence, permit
// and registry keys hold a '#' and are skipped). Each step's names are inspected on every node
// (InspectOperation), and a name is listed when it is held on a quorum and the scanned node is
// the first of its holders the listing may list from: so a name held throughout a listing is
// listed when the first node holding it is scanned, whatever the others hold. A node that does not
// vote at its turn, or fails its scan or an inspect of its own step, is *passed over* for the rest
// of the listing: names it holds are listed from their next holder instead (some may be listed
// twice: a listing is at-least-once). The cursor is "<node>-<SCAN cursor>-<passed-over nodes, a
// hex bit mask>".
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine_core.h"
#include "engine/script_operation.h"
#include "fencelock/storage/lease.h"

namespace fencelock::storage {

class ListOperation : public ReplySink, public std::enable_shared_from_this<ListOperation> {
 public:
  // `request` as checked by check_list_request().
  ListOperation(std::shared_ptr<EngineCore> core, ListRequest request,
                std::function<void(Result<LockPage>)> done);

  // Why `request` cannot be listed (kInvalidArgument), or Ok. On any thread.
  static Status check_list_request(const ListRequest& request, std::size_t node_count);

  void start();  // on the strand

 private:
  void scan();
  void on_reply(std::size_t node, std::uint32_t cookie, NodeReply reply) override;
  void on_inspected(std::vector<std::string> names, Result<Inspection> inspection);
  // The first holder of `key` not passed over: where the listing lists it from.
  std::size_t listed_from(const InspectedKey& key) const;
  void next_step();  // after a step: the next SCAN, the next node, or the page is done
  void pass_over();  // the scanned node failed: on to the next one, without it from now on
  void next_node();
  void scan_or_end_page();  // the next SCAN of this node, unless the page is full: then it ends
  bool page_full() const;
  std::string cursor() const;
  void finish(Result<LockPage> page);

  std::shared_ptr<EngineCore> core_;
  ListRequest request_;
  std::function<void(Result<LockPage>)> done_;
  std::string pattern_;  // SCAN MATCH: this engine's keys with the prefix
  std::size_t node_ = 0;
  std::string cursor_ = "0";
  std::uint32_t passed_over_ = 0;  // bit i: node i is passed over (kMaxLockNodes < 32)
  std::size_t steps_ = 0;
  LockPage page_;
};

}  // namespace fencelock::storage
