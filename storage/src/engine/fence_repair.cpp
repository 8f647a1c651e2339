#include "engine/fence_repair.h"

#include <string_view>
#include <utility>

#include "engine/lua_scripts.h"

namespace fencelock::storage {

namespace {

constexpr const char* kScanCount = "512";  // keys a SCAN step looks at (bounded work per step)

// This engine's key prefix's fences (a SCAN MATCH glob; the prefix's glob characters escaped).
// Only its own: the admission it records is trusted by its own prefix's engines only.
std::string fence_pattern(std::string_view prefix) {
  std::string pattern;
  for (const char c : prefix) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') pattern.push_back('\\');
    pattern.push_back(c);
  }
  return pattern.append("*#fence");
}

}  // namespace

std::size_t FenceRepair::sources_needed(std::size_t node_count, std::size_t voting_others) {
  if (voting_others + 1 <= quorum_size(node_count)) return voting_others;  // needed for a quorum
  return node_count - quorum_size(node_count) + 1;
}

FenceRepair::FenceRepair(std::shared_ptr<EngineCore> core, std::size_t target,
                         std::vector<std::size_t> sources, std::size_t needed, Done done)
    : core_(std::move(core)),
      target_(target),
      sources_(std::move(sources)),
      needed_(needed),
      done_(std::move(done)),
      pattern_(fence_pattern(core_->options().key_prefix)) {}

void FenceRepair::start() {
  if (sources_.empty() || sources_.size() < needed_) {
    finish();
    return;
  }
  scan();
}

void FenceRepair::scan() {
  if (core_->stopped()) {
    finish();
    return;
  }
  RespCommand command(6);
  command.arg("SCAN").arg(cursor_).arg("MATCH").arg(pattern_).arg("COUNT").arg(kScanCount);
  core_->send_to(sources_[source_], command, shared_from_this(), kScan);
}

void FenceRepair::on_reply(std::size_t node, std::uint32_t cookie, NodeReply reply) {
  if (finished_) return;
  switch (static_cast<Step>(cookie)) {
    case kScan: {
      if (!reply.is_array(2) || !reply.elements[0].is_string() || !reply.elements[1].is_array()) {
        source_failed();
        return;
      }
      cursor_ = reply.elements[0].text;
      keys_.clear();
      for (const NodeReply& key : reply.elements[1].elements) {
        if (key.is_string()) keys_.push_back(key.text);
      }
      if (keys_.empty()) {
        next_step();
        return;
      }
      RespCommand read(1 + keys_.size());
      read.arg("MGET");
      for (const auto& key : keys_) read.arg(key);
      core_->send_to(node, read, shared_from_this(), kRead);
      return;
    }
    case kRead: {
      if (!reply.is_array(keys_.size())) {
        source_failed();
        return;
      }
      std::vector<std::string> keys;
      std::vector<std::string> values;
      for (std::size_t i = 0; i < keys_.size(); ++i) {
        if (!reply.elements[i].is_string()) continue;  // gone since the SCAN
        keys.push_back(keys_[i]);
        values.push_back(reply.elements[i].text);
      }
      if (keys.empty()) {
        next_step();
        return;
      }
      RespCommand raise(3 + 2 * keys.size());
      raise.arg("EVAL").arg(kRaiseFencesScript).arg(static_cast<std::int64_t>(keys.size()));
      for (const auto& key : keys) raise.arg(key);
      for (const auto& value : values) raise.arg(value);
      core_->send_to(target_, raise, shared_from_this(), kRaise);
      return;
    }
    case kRaise: {
      // The target failing ends the repair: nothing it copies from elsewhere would land either.
      if (!reply.answered() || reply.is_error()) {
        finish();
        return;
      }
      next_step();
      return;
    }
  }
}

void FenceRepair::next_step() {
  if (cursor_ == "0") {
    source_done(true);
  } else {
    scan();
  }
}

void FenceRepair::source_failed() {
  source_done(false);
}

void FenceRepair::source_done(bool full) {
  if (full) ++scanned_;
  ++source_;
  cursor_ = "0";
  if (source_ < sources_.size()) {
    scan();
    return;
  }
  finish();
}

void FenceRepair::finish() {
  if (finished_) return;
  finished_ = true;
  const bool complete = scanned_ >= needed_;
  if (done_) std::exchange(done_, nullptr)(complete);
}

}  // namespace fencelock::storage
