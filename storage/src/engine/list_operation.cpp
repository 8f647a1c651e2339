#include "engine/list_operation.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <string_view>
#include <utility>

#include "fencelock/names.h"
#include "fencelock/storage/quorum.h"

namespace fencelock::storage {

namespace {

constexpr std::size_t kMaxSteps = 16;  // SCAN steps one page makes at most
// A page that has made a step ends once it has taken this long (listing steps rest under load:
// list_pacer.h), so a client's request timeout is not spent waiting for a full page.
constexpr std::chrono::milliseconds kPageBudget{1000};

// A SCAN MATCH glob: `text` with its glob characters escaped.
std::string glob_escaped(std::string_view text) {
  std::string pattern;
  for (const char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') pattern.push_back('\\');
    pattern.push_back(c);
  }
  return pattern;
}

bool parse_number(std::string_view text, std::size_t& out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

constexpr std::size_t kRunTagLength = 12;  // characters of a run_id a cursor keeps
constexpr std::size_t kMaxCursorLength = 64;

// Where `node` is in its run: the start of its run_id ("" before its first handshake).
std::string run_tag(const EngineCore& core, std::size_t node) {
  return std::string(core.node_run_id(node).substr(0, kRunTagLength));
}

bool is_run_tag(std::string_view text) {
  return text.size() <= kRunTagLength &&
         std::all_of(text.begin(), text.end(), [](char c) { return is_lock_name_char(c); });
}

// "<node>-<SCAN cursor>-<hex mask>[-<run tag>]" → its parts; false if it is not one. A cursor
// without a run tag (answered before there were any) names no incarnation: the node is scanned
// again from the start.
bool parse_cursor(std::string_view cursor, std::size_t& node, std::string& scan_cursor,
                  std::uint32_t& passed_over, std::string& run) {
  const auto first = cursor.find('-');
  const auto second = cursor.find('-', first == std::string_view::npos ? first : first + 1);
  std::size_t scan = 0;
  if (second == std::string_view::npos || !parse_number(cursor.substr(0, first), node) ||
      !parse_number(cursor.substr(first + 1, second - first - 1), scan))
    return false;
  std::string_view mask = cursor.substr(second + 1);
  const auto third = mask.find('-');
  const std::string_view tag = third == std::string_view::npos ? "" : mask.substr(third + 1);
  mask = mask.substr(0, third);
  const auto [end, ec] = std::from_chars(mask.data(), mask.data() + mask.size(), passed_over, 16);
  if (mask.empty() || ec != std::errc() || end != mask.data() + mask.size() || !is_run_tag(tag))
    return false;
  scan_cursor = std::string(cursor.substr(first + 1, second - first - 1));
  run = std::string(tag);
  return true;
}

}  // namespace

Status ListOperation::check_list_request(const ListRequest& request, std::size_t node_count) {
  if (request.prefix.size() > kMaxNameLength) {
    return make_error(ErrorCode::kInvalidArgument,
                      "prefix must be at most " + std::to_string(kMaxNameLength) + " characters");
  }
  for (const char c : request.prefix) {
    if (!is_lock_name_char(c))
      return make_error(ErrorCode::kInvalidArgument, "prefix must hold only [A-Za-z0-9._:-]");
  }
  if (request.limit < 1 || request.limit > kMaxListLimit) {
    return make_error(ErrorCode::kInvalidArgument,
                      "limit must be from 1 to " + std::to_string(kMaxListLimit));
  }
  std::size_t node = 0;
  std::string scan;
  std::uint32_t passed_over = 0;
  std::string run;
  if (!request.cursor.empty() &&
      (request.cursor.size() > kMaxCursorLength ||
       !parse_cursor(request.cursor, node, scan, passed_over, run) ||
       // A listing passes over nodes in order: only ones before the cursor's.
       node >= node_count || (passed_over >> node) != 0 ||
       // A listing ends before passing over more nodes than a quorum can miss (pass_over).
       static_cast<std::size_t>(std::popcount(passed_over)) >
           node_count - quorum_size(node_count))) {
    return make_error(ErrorCode::kInvalidArgument, "cursor is not one a listing answered");
  }
  return Done{};
}

ListOperation::ListOperation(std::shared_ptr<EngineCore> core, ListRequest request,
                             std::shared_ptr<ListKind> kind,
                             std::function<void(Result<std::string>)> done)
    : core_(std::move(core)),
      request_(std::move(request)),
      kind_(std::move(kind)),
      done_(std::move(done)) {
  pattern_ = glob_escaped(core_->options().key_prefix) + request_.prefix + "*" +
             glob_escaped(kind_->key_suffix());
  if (!request_.cursor.empty()) parse_cursor(request_.cursor, node_, cursor_, passed_over_, run_);
}

void ListOperation::start() {
  page_started_ = std::chrono::steady_clock::now();
  core_->operation_started();
  if (core_->voting_nodes() < core_->quorum()) {
    finish(make_error(ErrorCode::kUnavailable, "fewer than a quorum of lock nodes are voting"));
    return;
  }
  // (A cursor never passes over its own node: check_list_request.)
  if (!core_->node_votes(node_)) {
    pass_over();
    return;
  }
  scan();
}

void ListOperation::scan() {
  if (!core_->list_pacer().enter([self = shared_from_this()] { self->scan_now(); })) {
    Error busy = make_error(ErrorCode::kUnavailable,
                            "too many listings are in progress on this instance; try again");
    busy.retry_after = std::chrono::milliseconds(1000);
    finish(std::move(busy));
  }
}

void ListOperation::scan_now() {
  in_step_ = true;
  if (core_->stopped()) {
    finish(make_error(ErrorCode::kUnavailable, "the engine is stopping"));
    return;
  }
  // The node restarted since cursor_ was answered: the cursor means nothing to it.
  std::string run = run_tag(*core_, node_);
  if (run != run_) cursor_ = "0";
  run_ = std::move(run);
  ++steps_;
  // Keys looked at: what the page still has room for (SCAN may answer a few more).
  const std::size_t count = std::max<std::size_t>(request_.limit - kind_->kept(), 16);
  RespCommand command(6);
  command.arg("SCAN").arg(cursor_).arg("MATCH").arg(pattern_).arg("COUNT").arg(
      static_cast<std::int64_t>(count));
  core_->send_to(node_, command, shared_from_this(), 0);
}

void ListOperation::on_reply(std::size_t, std::uint32_t, NodeReply reply) {
  if (!reply.is_array(2) || !reply.elements[0].is_string() || !reply.elements[1].is_array()) {
    pass_over();  // down or refusing: what it would list is listed from the next holder
    return;
  }
  cursor_ = reply.elements[0].text;
  const std::string& prefix = core_->options().key_prefix;
  const std::string_view suffix = kind_->key_suffix();
  std::vector<std::string> names;
  for (const NodeReply& key : reply.elements[1].elements) {
    const std::string_view text = key.text;
    if (!key.is_string() || text.size() < prefix.size() + suffix.size() ||
        !text.starts_with(prefix) || !text.ends_with(suffix))
      continue;
    std::string name(text.substr(prefix.size(), text.size() - prefix.size() - suffix.size()));
    // Not a name: a fence, a permit's slot, another kind's key, a registry key.
    if (!is_valid_lock_name(name)) continue;
    if (request_.visible && !request_.visible(name)) continue;
    names.push_back(std::move(name));
  }
  if (names.empty()) {
    next_step();
    return;
  }
  kind_->inspect(core_, std::move(names),
                 [self = shared_from_this()](Result<StepInspection> inspected) {
                   self->on_inspected(std::move(inspected));
                 });
}

void ListOperation::on_inspected(Result<StepInspection> inspection) {
  if (!inspection.ok()) {
    finish(std::move(inspection).error());
    return;
  }
  if ((inspection->answered & (1u << node_)) == 0) {
    pass_over();  // without its own answers, what it holds cannot be told apart: its next holder
    return;
  }
  if (inspection->maybe_held) {  // never left out silently
    finish(std::move(*inspection->maybe_held));
    return;
  }
  for (std::size_t i = 0; i < inspection->held_on.size(); ++i) {
    const auto& grants = inspection->held_on[i];
    if (std::any_of(grants.begin(), grants.end(),
                    [&](std::uint32_t nodes) { return listed_from(nodes) == node_; }))
      kind_->keep(i);
  }
  next_step();
}

std::size_t ListOperation::listed_from(std::uint32_t nodes) const {
  const std::uint32_t listable = nodes & ~passed_over_;
  if (listable != 0) return static_cast<std::size_t>(std::countr_zero(listable));
  return core_->node_count();  // every holder passed over: none lists it (it cannot be: see .h)
}

bool ListOperation::page_full() const {
  return kind_->kept() >= request_.limit || steps_ >= kMaxSteps ||
         (steps_ > 0 && std::chrono::steady_clock::now() - page_started_ >= kPageBudget);
}

std::string ListOperation::cursor() const {
  char mask[16];
  const auto [end, ec] = std::to_chars(mask, mask + sizeof mask, passed_over_, 16);
  return std::to_string(node_) + "-" + cursor_ + "-" + std::string(mask, end) + "-" + run_;
}

void ListOperation::end_step() {
  if (std::exchange(in_step_, false)) core_->list_pacer().leave();
}

void ListOperation::next_step() {
  end_step();
  if (cursor_ == "0") {
    next_node();
    return;
  }
  scan_or_end_page();
}

void ListOperation::scan_or_end_page() {
  if (page_full()) {
    finish(cursor());
    return;
  }
  scan();
}

void ListOperation::pass_over() {
  end_step();
  passed_over_ |= 1u << node_;
  // Once more nodes are passed over than can be missing from a quorum, a name held only on them
  // would never be listed: the listing cannot be complete.
  if (static_cast<std::size_t>(std::popcount(passed_over_)) >
      core_->node_count() - core_->quorum()) {
    finish(make_error(ErrorCode::kUnavailable,
                      "too many lock nodes failed during this listing to tell what is held; "
                      "start the listing again"));
    return;
  }
  next_node();
}

bool ListOperation::quorums_covered() const {
  // Nodes 0..node_ less those passed over were scanned; a quorum misses at most N - Q nodes.
  const auto scanned = node_ + 1 - static_cast<std::size_t>(std::popcount(passed_over_));
  return scanned > core_->node_count() - core_->quorum();
}

void ListOperation::next_node() {
  cursor_ = "0";
  run_.clear();
  if (quorums_covered()) {
    finish(std::string());  // every quorum holds a scanned node: the listing is complete
    return;
  }
  while (++node_ < core_->node_count()) {
    if (!core_->node_votes(node_) || (passed_over_ & (1u << node_)) != 0) {
      pass_over();
      return;
    }
    scan_or_end_page();
    return;
  }
  finish(std::string());  // every node scanned: the listing is complete
}

void ListOperation::finish(Result<std::string> next) {
  end_step();
  if (!done_) return;
  core_->operation_finished();
  core_->complete_later(std::exchange(done_, nullptr), std::move(next));
}

}  // namespace fencelock::storage
