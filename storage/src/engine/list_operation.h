// One page of LockEngine::list. The lock nodes are scanned one after another, in the configured
// order (SCAN, bounded work per step, for this engine's lock keys with the prefix; waiters' fence,
// permit and registry keys hold a '#' and are skipped). Each step's names are inspected on every
// node (InspectOperation), and a name is listed when it is held on a quorum and the scanned node
// is the first voting node holding that lease: so a name held throughout a listing is listed
// once, when the first node holding it is scanned, whatever the others hold. Nodes that do not
// vote are skipped. The cursor is "<node>-<SCAN cursor>".
#pragma once

#include <cstddef>
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
  void on_inspected(std::vector<std::string> names, Result<std::vector<InspectedKey>> keys);
  void next_step();  // after a step: the next SCAN, the next node, or the page is done
  void next_node();
  void finish(Result<LockPage> page);

  std::shared_ptr<EngineCore> core_;
  ListRequest request_;
  std::function<void(Result<LockPage>)> done_;
  std::string pattern_;  // SCAN MATCH: this engine's keys with the prefix
  std::size_t node_ = 0;
  std::string cursor_ = "0";
  std::size_t steps_ = 0;
  LockPage page_;
};

}  // namespace fencelock::storage
