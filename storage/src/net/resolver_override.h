// A test seam for name resolution: a process-wide table name → answer that AddressResolver
// consults before asking the system resolver. Tests install it with ScopedResolverOverride before
// engines start, and may change an entry while they run (an address change, a name that stops
// resolving). Never used outside tests; an empty table (the default) changes nothing.
//
// Threading: every function is safe to call from any thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace fencelock::storage {

struct ResolverAnswer {
  std::vector<std::string> addresses;  // IP literals, in the order a lookup returns them
  std::string failure;                 // not empty: the lookup fails with this message
  std::chrono::milliseconds delay{0};  // the answer arrives this much later
};

// The answer installed for `name` (lower-case, as HostPort keeps it), if any.
std::optional<ResolverAnswer> overridden_answer(const std::string& name);

// Installs an empty table; restores "no override" when destroyed. One at a time per process.
class ScopedResolverOverride {
 public:
  ScopedResolverOverride();
  ~ScopedResolverOverride();
  ScopedResolverOverride(const ScopedResolverOverride&) = delete;
  ScopedResolverOverride& operator=(const ScopedResolverOverride&) = delete;

  // Replaces the answer for `name`; takes effect on the next lookup.
  void set(const std::string& name, ResolverAnswer answer);
  void set(const std::string& name, std::vector<std::string> addresses) {
    set(name, ResolverAnswer{std::move(addresses), {}, {}});
  }
  void fail(const std::string& name, std::string why) {
    set(name, ResolverAnswer{{}, std::move(why), {}});
  }
};

}  // namespace fencelock::storage
