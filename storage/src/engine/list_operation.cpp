#include "engine/list_operation.h"

#include <charconv>
#include <string_view>
#include <utility>

#include "fencelock/names.h"

namespace fencelock::storage {

namespace {

constexpr std::size_t kMaxSteps = 16;  // SCAN steps one page makes at most

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

// "<node>-<SCAN cursor>" → node and cursor; false if it is not one.
bool parse_cursor(std::string_view cursor, std::size_t& node, std::string& scan_cursor) {
  const auto dash = cursor.find('-');
  std::size_t scan = 0;
  if (dash == std::string_view::npos || !parse_number(cursor.substr(0, dash), node) ||
      !parse_number(cursor.substr(dash + 1), scan))
    return false;
  scan_cursor = std::string(cursor.substr(dash + 1));
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
  if (!request.cursor.empty() &&
      (request.cursor.size() > 40 || !parse_cursor(request.cursor, node, scan) ||
       node >= node_count)) {
    return make_error(ErrorCode::kInvalidArgument, "cursor is not one a listing answered");
  }
  return Done{};
}

ListOperation::ListOperation(std::shared_ptr<EngineCore> core, ListRequest request,
                             std::function<void(Result<LockPage>)> done)
    : core_(std::move(core)), request_(std::move(request)), done_(std::move(done)) {
  pattern_ = glob_escaped(core_->options().key_prefix) + request_.prefix + "*";
  if (!request_.cursor.empty()) parse_cursor(request_.cursor, node_, cursor_);
}

void ListOperation::start() {
  core_->operation_started();
  if (core_->voting_nodes() < core_->quorum()) {
    finish(make_error(ErrorCode::kUnavailable, "fewer than a quorum of lock nodes are voting"));
    return;
  }
  if (!core_->node_votes(node_)) {
    next_node();
    return;
  }
  scan();
}

void ListOperation::scan() {
  if (core_->stopped()) {
    finish(make_error(ErrorCode::kUnavailable, "the engine is stopping"));
    return;
  }
  ++steps_;
  const std::size_t count = std::max<std::size_t>(request_.limit, 16);
  RespCommand command(6);
  command.arg("SCAN").arg(cursor_).arg("MATCH").arg(pattern_).arg("COUNT").arg(
      static_cast<std::int64_t>(count));
  core_->send_to(node_, command, shared_from_this(), 0);
}

void ListOperation::on_reply(std::size_t, std::uint32_t, NodeReply reply) {
  using Kind = NodeReply::Kind;
  if (reply.kind != Kind::kArray || reply.elements.size() != 2 ||
      reply.elements[0].kind != Kind::kString || reply.elements[1].kind != Kind::kArray) {
    // The node is down or refused: the names it would list are listed from the next holder.
    next_node();
    return;
  }
  cursor_ = reply.elements[0].text;
  const std::string& prefix = core_->options().key_prefix;
  std::vector<std::string> names;
  std::vector<std::string> keys;
  for (const NodeReply& key : reply.elements[1].elements) {
    if (key.kind != Kind::kString || key.text.compare(0, prefix.size(), prefix) != 0) continue;
    std::string name = key.text.substr(prefix.size());
    if (!is_valid_lock_name(name)) continue;  // a fence, a permit's slot, a registry key
    keys.push_back(key.text);
    names.push_back(std::move(name));
  }
  if (keys.empty()) {
    next_step();
    return;
  }
  auto self = shared_from_this();
  std::make_shared<InspectOperation>(
      core_, std::move(keys),
      [self, names = std::move(names)](Result<std::vector<InspectedKey>> inspected) mutable {
        self->on_inspected(std::move(names), std::move(inspected));
      })
      ->start();
}

void ListOperation::on_inspected(std::vector<std::string> names,
                                 Result<std::vector<InspectedKey>> keys) {
  if (!keys.ok()) {
    finish(std::move(keys).error());
    return;
  }
  for (std::size_t i = 0; i < names.size() && i < keys.value().size(); ++i) {
    InspectedKey& key = keys.value()[i];
    if (!key.status.held || key.first_holder != node_) continue;
    page_.locks.push_back(HeldLock{std::move(names[i]), key.status.token,
                                   std::move(key.status.holder),
                                   key.status.remaining.value_or(std::chrono::milliseconds(0))});
  }
  next_step();
}

void ListOperation::next_step() {
  if (cursor_ == "0") {
    next_node();
    return;
  }
  if (page_.locks.size() >= request_.limit || steps_ >= kMaxSteps) {
    page_.next = std::to_string(node_) + "-" + cursor_;
    finish(std::move(page_));
    return;
  }
  scan();
}

void ListOperation::next_node() {
  cursor_ = "0";
  while (++node_ < core_->node_count()) {
    if (!core_->node_votes(node_)) continue;
    if (page_.locks.size() >= request_.limit || steps_ >= kMaxSteps) {
      page_.next = std::to_string(node_) + "-0";
      finish(std::move(page_));
      return;
    }
    scan();
    return;
  }
  finish(std::move(page_));  // every node scanned: the listing is complete
}

void ListOperation::finish(Result<LockPage> page) {
  if (!done_) return;
  core_->operation_finished();
  core_->complete_later(std::exchange(done_, nullptr), std::move(page));
}

}  // namespace fencelock::storage
