#include "child_environment.h"

#include <string_view>

namespace fencelock::cli {

std::string tokens_text(const Lease& lease) {
  std::string text;
  for (std::size_t i = 0; i < lease.names().size(); ++i) {
    if (i > 0) text += ',';
    text += lease.names()[i] + "=" + std::to_string(lease.tokens()[i]);
  }
  return text;
}

std::vector<std::string> child_environment(const std::vector<std::string>& inherited,
                                           const Lease& lease) {
  static constexpr std::string_view kOurs[] = {
      "FENCELOCK_NAME=", "FENCELOCK_NAMES=",   "FENCELOCK_TOKEN=", "FENCELOCK_TOKENS=",
      "FENCELOCK_SLOT=", "FENCELOCK_PERMITS=", "FENCELOCK_MODE=",  "FENCELOCK_LEASE="};
  std::vector<std::string> out;
  for (const auto& entry : inherited) {
    bool ours = false;
    for (const auto prefix : kOurs) ours = ours || entry.starts_with(prefix);
    if (!ours) out.push_back(entry);  // ours are set below; the lease never reaches the command
  }
  if (lease.kind() == LeaseKind::kSet) {
    std::string names;
    for (const auto& name : lease.names()) names += (names.empty() ? "" : ",") + name;
    out.push_back("FENCELOCK_NAMES=" + names);
    out.push_back("FENCELOCK_TOKENS=" + tokens_text(lease));
    return out;
  }
  out.push_back("FENCELOCK_NAME=" + lease.name());
  out.push_back("FENCELOCK_TOKEN=" + std::to_string(lease.token()));
  if (lease.kind() == LeaseKind::kPermit) {
    out.push_back("FENCELOCK_SLOT=" + std::to_string(lease.slot()));
    out.push_back("FENCELOCK_PERMITS=" + std::to_string(lease.permits()));
  }
  if (lease.kind() == LeaseKind::kRead || lease.kind() == LeaseKind::kWrite)
    out.push_back(std::string("FENCELOCK_MODE=") +
                  (lease.kind() == LeaseKind::kWrite ? "write" : "read"));
  return out;
}

}  // namespace fencelock::cli
