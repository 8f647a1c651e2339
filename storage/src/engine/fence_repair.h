// Copies the fences (lua_scripts.h: "<key prefix><name>#fence") back onto a lock node that may
// have lost them (node_trust.h: fences_missing), before that node votes again — this engine's key
// prefix's: the admission recorded afterwards is trusted by that prefix's engines only.
//
// The fences are read from the other nodes that vote, one after another: SCAN (bounded work per
// step) for keys ending in "#fence", MGET their values, and a script on the target that raises
// each to at least that value (never lowers one). The repair is complete once `needed` of them
// were scanned to the end (a source that fails is skipped; too few, and the caller tries again
// later). sources_needed(): with N − quorum + 1 scanned, every fence is found — each grant wrote
// its fence on a majority, and any majority meets them — so the engine asks for that many while
// the cluster has a quorum without the target; when it needs the target to reach a quorum, it
// takes every voting node there is (best effort: fences a grant left only on nodes that are down
// or lost them too are not copied, and token order for those names rests on the token store).
// Fences written by grants while it runs reach the target through the grants themselves: the
// acquire scripts run on every node, voting or not.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine_core.h"

namespace fencelock::storage {

class FenceRepair : public ReplySink, public std::enable_shared_from_this<FenceRepair> {
 public:
  // `complete`: enough nodes were scanned to the end (above).
  using Done = std::function<void(bool complete)>;

  // `sources`: the other nodes voting now; complete once `needed` of them were scanned.
  FenceRepair(std::shared_ptr<EngineCore> core, std::size_t target,
              std::vector<std::size_t> sources, std::size_t needed, Done done);

  void start();  // on the strand

  // How many of `voting_others` (the other nodes voting now) a repair needs scanned to the end,
  // for `node_count` nodes (above).
  static std::size_t sources_needed(std::size_t node_count, std::size_t voting_others);

 private:
  enum Step : std::uint32_t { kScan = 1, kRead = 2, kRaise = 3 };

  void on_reply(std::size_t node, std::uint32_t cookie, NodeReply reply) override;
  void scan();                  // the next SCAN step on the current source
  void next_step();             // after a step: the next SCAN, or the source is done
  void source_failed();         // skip it
  void source_done(bool full);  // on to the next source, or finish
  void finish();

  std::shared_ptr<EngineCore> core_;
  std::size_t target_;
  std::vector<std::size_t> sources_;
  std::size_t needed_;
  Done done_;
  std::string pattern_;     // SCAN MATCH for this engine's fences
  std::size_t source_ = 0;  // index into sources_
  std::string cursor_ = "0";
  std::vector<std::string> keys_;  // of the step in flight
  std::size_t scanned_ = 0;        // sources scanned to the end
  bool finished_ = false;
};

}  // namespace fencelock::storage
