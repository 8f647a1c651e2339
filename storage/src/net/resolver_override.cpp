#include "net/resolver_override.h"

#include <map>
#include <mutex>

namespace fencelock::storage {

namespace {

struct Table {
  std::mutex mutex;
  bool installed = false;
  std::map<std::string, ResolverAnswer, std::less<>> answers;
};

Table& table() {
  static Table instance;
  return instance;
}

}  // namespace

std::optional<ResolverAnswer> overridden_answer(const std::string& name) {
  Table& t = table();
  const std::lock_guard lock(t.mutex);
  if (!t.installed) return std::nullopt;
  const auto it = t.answers.find(name);
  if (it == t.answers.end()) return std::nullopt;
  return it->second;
}

ScopedResolverOverride::ScopedResolverOverride() {
  Table& t = table();
  const std::lock_guard lock(t.mutex);
  t.installed = true;
  t.answers.clear();
}

ScopedResolverOverride::~ScopedResolverOverride() {
  Table& t = table();
  const std::lock_guard lock(t.mutex);
  t.installed = false;
  t.answers.clear();
}

void ScopedResolverOverride::set(const std::string& name, ResolverAnswer answer) {
  Table& t = table();
  const std::lock_guard lock(t.mutex);
  t.answers[name] = std::move(answer);
}

}  // namespace fencelock::storage
