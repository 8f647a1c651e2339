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
    return op.outcome == Outcome::kOk && op.token != 0 && (op.f == "acquire" || op.f == "draw");
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

CheckResult check_leases(const std::vector<Operation>& history) {
  CheckResult result{"leases", 0, {}};
  struct Window {
    std::size_t acquire;
    std::int64_t open;
    std::int64_t close;
  };
  std::map<std::string, std::vector<Window>> windows;
  std::map<std::int64_t, std::size_t> window_of_lease;  // lease id → index in its name's list
  for (std::size_t i = 0; i < history.size(); ++i) {
    const Operation& op = history[i];
    if (op.f != "acquire" || op.outcome != Outcome::kOk) continue;
    auto& list = windows[op.name];
    window_of_lease[static_cast<std::int64_t>(i)] = list.size();
    list.push_back({i, op.complete_ns, op.invoke_ns + (op.waited_ms + op.validity_ms) * kNsPerMs});
  }
  // Extends push the deadline out; releases cut it (both found through the lease's acquire).
  for (const Operation& op : history) {
    if (op.lease < 0 || op.f == "acquire") continue;
    const auto it = window_of_lease.find(op.lease);
    if (it == window_of_lease.end()) continue;
    Window& window = windows[history[static_cast<std::size_t>(op.lease)].name][it->second];
    if (op.f == "extend" && op.outcome == Outcome::kOk) {
      window.close = std::max(window.close, op.invoke_ns + op.validity_ms * kNsPerMs);
    }
  }
  for (const Operation& op : history) {
    if (op.lease < 0 || op.f != "release") continue;
    const auto it = window_of_lease.find(op.lease);
    if (it == window_of_lease.end()) continue;
    Window& window = windows[history[static_cast<std::size_t>(op.lease)].name][it->second];
    window.close = std::min(window.close, op.invoke_ns);
  }
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
             {latest->acquire, window.acquire}});
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
