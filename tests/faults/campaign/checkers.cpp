#include "checkers.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace fencelock::faults {

namespace {

constexpr std::int64_t kNsPerMs = 1'000'000;

std::map<std::string, std::vector<std::size_t>> by_name(const std::vector<Operation>& history,
                                                        bool (*wanted)(const Operation&)) {
  std::map<std::string, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < history.size(); ++i) {
    if (wanted(history[i])) groups[history[i].name].push_back(i);
  }
  return groups;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

}  // namespace

CheckResult check_tokens(const std::vector<Operation>& history) {
  CheckResult result{"tokens", 0, {}};
  const auto groups = by_name(history, [](const Operation& op) {
    return op.outcome == Outcome::kOk && op.token != 0 &&
           (op.f == "acquire" || op.f == "revoke" || op.f == "draw");
  });
  for (const auto& [name, indices] : groups) {
    result.checked += indices.size();
    std::map<std::uint64_t, std::size_t> owner;
    for (const std::size_t i : indices) {
      const auto [it, fresh] = owner.emplace(history[i].token, i);
      if (!fresh) {
        result.violations.push_back(
            {name + ": token " + std::to_string(history[i].token) + " answered twice",
             {it->second, i}});
      }
    }
    // Real-time order: sweep invocations in time order, folding in every completion before each.
    std::vector<std::size_t> by_invoke = indices;
    std::vector<std::size_t> by_complete = indices;
    std::sort(by_invoke.begin(), by_invoke.end(), [&](std::size_t a, std::size_t b) {
      return history[a].invoke_ns < history[b].invoke_ns;
    });
    std::sort(by_complete.begin(), by_complete.end(), [&](std::size_t a, std::size_t b) {
      return history[a].complete_ns < history[b].complete_ns;
    });
    std::size_t done = 0;
    std::size_t highest = by_complete.front();  // the completed operation with the largest token
    bool any = false;
    for (const std::size_t i : by_invoke) {
      while (done < by_complete.size() &&
             history[by_complete[done]].complete_ns < history[i].invoke_ns) {
        const std::size_t c = by_complete[done++];
        if (!any || history[c].token > history[highest].token) highest = c;
        any = true;
      }
      if (any && history[highest].token >= history[i].token) {
        result.violations.push_back(
            {name + ": token " + std::to_string(history[i].token) + " was answered after token " +
                 std::to_string(history[highest].token) + " had completed (real-time order)",
             {highest, i}});
      }
    }
  }
  return result;
}

namespace {

// A lease's client-side validity window (check_leases).
struct Window {
  std::size_t grant;  // the acquire's or revoke's index
  std::int64_t open;
  std::int64_t close;
};

bool is_grant(const Operation& op) {
  return (op.f == "acquire" || op.f == "revoke") && op.outcome == Outcome::kOk;
}

// Every grant's window per name, cut by what happened to its lease: successful extends push the
// deadline out, a release ends it where it was invoked.
std::map<std::string, std::vector<Window>> lease_windows(const std::vector<Operation>& history) {
  std::map<std::string, std::vector<Window>> windows;
  std::map<std::int64_t, Window*> window_of_lease;  // lease id (grant index) → its window
  for (std::size_t i = 0; i < history.size(); ++i) {
    const Operation& op = history[i];
    if (!is_grant(op)) continue;
    windows[op.name].push_back(
        {i, op.complete_ns, op.invoke_ns + (op.waited_ms + op.validity_ms) * kNsPerMs});
  }
  for (auto& [name, list] : windows) {
    for (Window& window : list) window_of_lease[static_cast<std::int64_t>(window.grant)] = &window;
  }
  for (const Operation& op : history) {
    if (op.lease < 0 || op.f != "extend" || op.outcome != Outcome::kOk) continue;
    const auto it = window_of_lease.find(op.lease);
    if (it == window_of_lease.end()) continue;
    it->second->close = std::max(it->second->close, op.invoke_ns + op.validity_ms * kNsPerMs);
  }
  for (const Operation& op : history) {
    if (op.lease < 0 || op.f != "release") continue;
    const auto it = window_of_lease.find(op.lease);
    if (it != window_of_lease.end()) it->second->close = std::min(it->second->close, op.invoke_ns);
  }
  return windows;
}

// Revokes end the windows they may have taken over: a revoke invoked at t (granted or not — a
// failed one may have overwritten the lease on some nodes) ends every window of its name that
// opened before t at t. A granted revoke also ends, at its completion, the windows of grants that
// were invoked before it completed and drew a smaller token: granted before the revoke took
// effect (the revoke raised the fence above their token on a quorum), answered after its invoke.
void cut_by_revokes(const std::vector<Operation>& history,
                    std::map<std::string, std::vector<Window>>& windows) {
  for (std::size_t r = 0; r < history.size(); ++r) {
    const Operation& revoke = history[r];
    if (revoke.f != "revoke") continue;
    const auto list = windows.find(revoke.name);
    if (list == windows.end()) continue;
    for (Window& window : list->second) {
      if (window.grant == r) continue;
      const Operation& grant = history[window.grant];
      if (window.open < revoke.invoke_ns) {
        window.close = std::min(window.close, revoke.invoke_ns);
      } else if (revoke.outcome == Outcome::kOk && grant.invoke_ns < revoke.complete_ns &&
                 grant.token < revoke.token) {
        window.close = std::min(window.close, revoke.complete_ns);
      }
    }
  }
}

}  // namespace

CheckResult check_leases(const std::vector<Operation>& history) {
  CheckResult result{"leases", 0, {}};
  std::map<std::string, std::vector<Window>> windows = lease_windows(history);
  cut_by_revokes(history, windows);
  for (auto& [name, list] : windows) {
    result.checked += list.size();
    std::sort(list.begin(), list.end(),
              [](const Window& a, const Window& b) { return a.open < b.open; });
    const Window* latest = nullptr;  // of the windows opened so far, the one closing last
    for (const Window& window : list) {
      if (window.close <= window.open) continue;  // answered after its own deadline: never held
      if (latest != nullptr && latest->close > window.open) {
        const auto overlap_ms = (std::min(latest->close, window.close) - window.open) / kNsPerMs;
        result.violations.push_back(
            {name + ": two leases valid at once for " + std::to_string(overlap_ms) + " ms",
             {latest->grant, window.grant}});
      }
      if (latest == nullptr || window.close > latest->close) latest = &window;
    }
  }
  return result;
}

CheckResult check_store(const std::vector<StoreEntry>& log) {
  CheckResult result{"store", log.size(), {}};
  std::map<std::string, std::uint64_t> newest;  // per key: the newest token applied or fence-read
  std::vector<StoreEntry> sorted = log;
  std::sort(sorted.begin(), sorted.end(),
            [](const StoreEntry& a, const StoreEntry& b) { return a.seq < b.seq; });
  for (const StoreEntry& entry : sorted) {
    const bool applied = entry.outcome == "applied" || entry.outcome == "applied_unfenced";
    const bool fenced = entry.outcome == "fenced";
    if (!applied && !fenced) continue;
    std::uint64_t& seen = newest[entry.key];
    if (applied && entry.token < seen) {
      result.violations.push_back({"store applied a write to " + entry.key + " with token " +
                                       std::to_string(entry.token) + " after it had seen token " +
                                       std::to_string(seen) + " (log seq " +
                                       std::to_string(entry.seq) + ")",
                                   {}});
    }
    seen = std::max(seen, entry.token);
  }
  return result;
}

CheckResult check_set(const std::vector<Operation>& history, const std::string& final_value) {
  CheckResult result{"set", 0, {}};
  const auto present = split(final_value);
  const std::set<std::string> final_set(present.begin(), present.end());
  for (std::size_t i = 0; i < history.size(); ++i) {
    const Operation& op = history[i];
    if (op.f != "write" || op.outcome != Outcome::kOk) continue;
    ++result.checked;
    // The element this write added is the last one of its value.
    const auto elements = split(op.value);
    if (elements.empty() || final_set.count(elements.back()) != 0) continue;
    result.violations.push_back(
        {"acknowledged element " + elements.back() + " is missing from the final set", {i}});
  }
  return result;
}

CheckResult check_liveness(const std::vector<Operation>& history, std::int64_t healed_ns,
                           std::chrono::milliseconds bound) {
  CheckResult result{"liveness", 0, {}};
  std::int64_t first = -1;
  for (const Operation& op : history) {
    if (op.f != "acquire" || op.invoke_ns < healed_ns) continue;
    ++result.checked;
    if (op.outcome == Outcome::kOk && (first < 0 || op.complete_ns < first)) first = op.complete_ns;
  }
  const std::int64_t limit = healed_ns + bound.count() * kNsPerMs;
  if (first < 0 || first > limit) {
    result.violations.push_back(
        {"no acquire succeeded within " + std::to_string(bound.count()) +
             " ms of the fault healing" +
             (first < 0
                  ? std::string(" (none at all)")
                  : " (first after " + std::to_string((first - healed_ns) / kNsPerMs) + " ms)"),
         {}});
  }
  return result;
}

std::vector<StoreEntry> parse_store_log(const std::string& text) {
  std::vector<StoreEntry> entries;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto json = nlohmann::json::parse(line, nullptr, false);
    if (json.is_discarded() || !json.is_object()) continue;
    StoreEntry entry;
    entry.seq = json.value("seq", std::uint64_t{0});
    entry.op = json.value("op", "");
    entry.key = json.value("key", "");
    entry.token = json.value("token", std::uint64_t{0});
    entry.outcome = json.value("outcome", "");
    entries.push_back(std::move(entry));
  }
  return entries;
}

std::string describe(const std::vector<Operation>& history, const Violation& violation) {
  if (violation.operations.empty()) return violation.message + "\n";
  std::set<std::string> names;
  std::int64_t from = INT64_MAX;
  std::int64_t to = INT64_MIN;
  for (const std::size_t i : violation.operations) {
    const Operation& op = history.at(i);
    names.insert(op.name);
    from = std::min(from, op.invoke_ns);
    to = std::max(to, op.complete_ns);
    // A lease's window runs past its acquire: show what happened to it, too.
    for (const Operation& other : history) {
      if (other.lease == static_cast<std::int64_t>(i)) to = std::max(to, other.complete_ns);
    }
  }
  std::ostringstream out;
  out << violation.message << "\n";
  for (std::size_t i = 0; i < history.size(); ++i) {
    const Operation& op = history[i];
    const bool named = std::find(violation.operations.begin(), violation.operations.end(), i) !=
                       violation.operations.end();
    const bool nearby = op.process < 0 || names.count(op.name) != 0;
    if (!named && (!nearby || op.complete_ns < from || op.invoke_ns > to)) continue;
    out << (named ? "  * " : "    ") << "#" << i << " p" << op.process << " " << op.f << " "
        << op.name << " [" << op.invoke_ns / kNsPerMs << " ms → " << op.complete_ns / kNsPerMs
        << " ms] " << to_string(op.outcome);
    if (op.token != 0) out << " token=" << op.token;
    if (op.validity_ms >= 0) out << " validity_ms=" << op.validity_ms;
    if (op.waited_ms != 0) out << " waited_ms=" << op.waited_ms;
    if (op.lease >= 0 && op.f != "acquire") out << " lease=#" << op.lease;
    if (!op.detail.empty()) out << " (" << op.detail << ")";
    out << "\n";
  }
  return out.str();
}

}  // namespace fencelock::faults
