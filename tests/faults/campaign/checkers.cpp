#include "checkers.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <utility>

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

// A repeat carries its request's id, so its token and lease must be those of an answer to the same
// request; the campaign's other clients name no request.
bool is_repeat_of(const Operation& repeat, const Operation& grant) {
  return repeat.repeated && !repeat.request_id.empty() && repeat.request_id == grant.request_id &&
         !repeat.lease_string.empty() && repeat.lease_string == grant.lease_string;
}

// Per request id: when its first attempt was invoked (any outcome).
std::map<std::string, std::int64_t> first_attempts(const std::vector<Operation>& history) {
  std::map<std::string, std::int64_t> first;
  for (const Operation& op : history) {
    if (op.f != "acquire" || op.request_id.empty()) continue;
    const auto [it, fresh] = first.emplace(op.request_id, op.invoke_ns);
    if (!fresh) it->second = std::min(it->second, op.invoke_ns);
  }
  return first;
}

}  // namespace

CheckResult check_tokens(const std::vector<Operation>& history) {
  CheckResult result{"tokens", 0, {}};
  const auto groups = by_name(history, [](const Operation& op) {
    return op.outcome == Outcome::kOk && op.token != 0 &&
           (op.f == "acquire" || op.f == "revoke" || op.f == "draw");
  });
  const std::map<std::string, std::int64_t> first_asked = first_attempts(history);
  for (const auto& [name, indices] : groups) {
    result.checked += indices.size();
    std::map<std::uint64_t, std::vector<std::size_t>> answered;  // token → its answers
    for (const std::size_t i : indices) answered[history[i].token].push_back(i);
    for (const auto& [token, answers] : answered) {
      // The grant itself is the answer not marked repeated (or the first, if all are).
      const auto unmarked = std::find_if(answers.begin(), answers.end(),
                                         [&](std::size_t i) { return !history[i].repeated; });
      const std::size_t grant = unmarked != answers.end() ? *unmarked : answers.front();
      for (const std::size_t i : answers) {
        if (i == grant || is_repeat_of(history[i], history[grant])) continue;
        result.violations.push_back(
            {name + ": token " + std::to_string(token) + " answered twice" +
                 (history[i].repeated ? " (marked repeated, but not the same lease and request)"
                                      : ""),
             {std::min(grant, i), std::max(grant, i)}});
      }
    }
    // Real-time order: sweep invocations in time order, folding in every completion before each.
    // A repeat answers a token drawn by its request's first attempt: it is judged from there.
    const auto invoked = [&](std::size_t i) {
      const Operation& op = history[i];
      return op.repeated && !op.request_id.empty() ? first_asked.at(op.request_id) : op.invoke_ns;
    };
    std::vector<std::size_t> by_invoke = indices;
    std::vector<std::size_t> by_complete = indices;
    std::sort(by_invoke.begin(), by_invoke.end(),
              [&](std::size_t a, std::size_t b) { return invoked(a) < invoked(b); });
    std::sort(by_complete.begin(), by_complete.end(), [&](std::size_t a, std::size_t b) {
      return history[a].complete_ns < history[b].complete_ns;
    });
    std::size_t done = 0;
    std::size_t highest = by_complete.front();  // the completed operation with the largest token
    bool any = false;
    for (const std::size_t i : by_invoke) {
      while (done < by_complete.size() && history[by_complete[done]].complete_ns < invoked(i)) {
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

// An answered grant's client-side validity window (check_leases).
struct Window {
  std::size_t grant;  // the acquire's or revoke's index
  std::int64_t open;
  std::int64_t close;
  // Which holder: the request id and lease of an acquire that named its request (its repeats
  // answer the same grant again), else the grant's own index.
  std::string holder;
  bool shared = false;  // a read grant of a read/write lock: other reads may overlap it
};

// Of the windows added so far: the one closing last, and the one closing last among those of
// another holder than it (windows of one holder, a grant and its repeats, may overlap).
class LatestWindows {
 public:
  // The latest-closing window not of `holder`, nullptr if none.
  const Window* before(const std::string& holder) const {
    return latest_ != nullptr && latest_->holder == holder ? latest_other_ : latest_;
  }
  void add(const Window& window) {
    if (latest_ == nullptr || window.close > latest_->close) {
      if (latest_ != nullptr && latest_->holder != window.holder) latest_other_ = latest_;
      latest_ = &window;
    } else if (latest_->holder != window.holder &&
               (latest_other_ == nullptr || window.close > latest_other_->close)) {
      latest_other_ = &window;
    }
  }

 private:
  const Window* latest_ = nullptr;
  const Window* latest_other_ = nullptr;
};

// "two leases", or for a read/write lock "a write and a read lease" and the like.
std::string what_overlapped(const std::vector<Operation>& history, const Window& a,
                            const Window& b) {
  const std::string& first = history[a.grant].mode;
  const std::string& second = history[b.grant].mode;
  if (first.empty() && second.empty()) return "two leases";
  return "a " + (first.empty() ? std::string("lock") : first) + " and a " +
         (second.empty() ? std::string("lock") : second) + " lease";
}

std::string holder_of(const Operation& op, std::size_t index) {
  if (op.request_id.empty() || op.lease_string.empty()) return "#" + std::to_string(index);
  return op.request_id + " " + op.lease_string;
}

bool is_grant(const Operation& op) {
  return (op.f == "acquire" || op.f == "revoke") && op.outcome == Outcome::kOk;
}

// Every answer's window per name, cut by what happened to its lease: successful extends push the
// deadline out, a release ends every window of its holder where it was invoked.
std::map<std::string, std::vector<Window>> lease_windows(const std::vector<Operation>& history) {
  std::map<std::string, std::vector<Window>> windows;
  std::map<std::int64_t, Window*> window_of_lease;  // lease id (grant index) → its window
  std::map<std::string, std::vector<Window*>> windows_of_holder;
  for (std::size_t i = 0; i < history.size(); ++i) {
    const Operation& op = history[i];
    if (!is_grant(op)) continue;
    windows[op.name].push_back({i, op.complete_ns,
                                op.invoke_ns + (op.waited_ms + op.validity_ms) * kNsPerMs,
                                holder_of(op, i), op.mode == "read"});
  }
  for (auto& [name, list] : windows) {
    for (Window& window : list) {
      window_of_lease[static_cast<std::int64_t>(window.grant)] = &window;
      windows_of_holder[name + "\n" + window.holder].push_back(&window);
    }
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
    if (it == window_of_lease.end()) continue;
    for (Window* window : windows_of_holder[op.name + "\n" + it->second->holder])
      window->close = std::min(window->close, op.invoke_ns);
  }
  return windows;
}

// Revokes end the windows they may have taken over: a revoke invoked at t, granted or of unknown
// outcome, ends every window of its name that opened before t at t. One that failed ends none: its
// cleanup puts back what it overwrote, and where that cleanup does not arrive its value lasts as
// long as the value it overwrote (lua_revoke_scripts.h). A granted revoke also ends, at its
// completion, the windows of grants that were invoked before it completed and drew a smaller
// token: granted before the revoke took effect (the revoke raised the fence above their token on
// a quorum), answered after its invoke.
void cut_by_revokes(const std::vector<Operation>& history,
                    std::map<std::string, std::vector<Window>>& windows) {
  for (std::size_t r = 0; r < history.size(); ++r) {
    const Operation& revoke = history[r];
    if (revoke.f != "revoke" || revoke.outcome == Outcome::kFail) continue;
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
    // Of the windows opened so far, the latest-closing of all and of the exclusive ones (not
    // reads): a read may overlap only reads, anything else overlaps nothing.
    LatestWindows any;
    LatestWindows exclusive;
    for (const Window& window : list) {
      if (window.close <= window.open) continue;  // answered after its own deadline: never held
      const Window* before = (window.shared ? exclusive : any).before(window.holder);
      if (before != nullptr && before->close > window.open) {
        const auto overlap_ms = (std::min(before->close, window.close) - window.open) / kNsPerMs;
        result.violations.push_back({name + ": " + what_overlapped(history, *before, window) +
                                         " valid at once for " + std::to_string(overlap_ms) + " ms",
                                     {before->grant, window.grant}});
      }
      any.add(window);
      if (!window.shared) exclusive.add(window);
    }
  }
  return result;
}

CheckResult check_requests(const std::vector<Operation>& history) {
  CheckResult result{"requests", 0, {}};
  std::map<std::string, std::vector<Window>> windows = lease_windows(history);
  cut_by_revokes(history, windows);
  std::map<std::size_t, const Window*> window_of;  // grant index → its window
  for (const auto& [name, list] : windows) {
    for (const Window& window : list) window_of[window.grant] = &window;
  }
  std::map<std::string, std::vector<std::size_t>> attempts;  // request id → its acquires
  for (std::size_t i = 0; i < history.size(); ++i) {
    if (history[i].f == "acquire" && !history[i].request_id.empty())
      attempts[history[i].request_id].push_back(i);
  }
  for (const auto& [request, list] : attempts) {
    for (const std::size_t b : list) {
      const Operation& answer = history[b];
      if (answer.outcome != Outcome::kOk) continue;
      ++result.checked;
      const bool asked_before = std::any_of(list.begin(), list.end(), [&](std::size_t a) {
        return a != b && history[a].invoke_ns < answer.complete_ns;
      });
      if (answer.repeated && !asked_before) {
        result.violations.push_back(
            {answer.name + ": request " + request + " answered as a repeat, but was asked once",
             {b}});
      }
      for (const std::size_t a : list) {
        if (a == b || history[a].outcome != Outcome::kOk ||
            history[a].lease_string == answer.lease_string) {
          continue;
        }
        const Window& earlier = *window_of.at(a);
        if (earlier.open < answer.complete_ns && answer.complete_ns < earlier.close) {
          result.violations.push_back(
              {answer.name + ": request " + request + " granted twice: another lease answered " +
                   std::to_string((earlier.close - answer.complete_ns) / kNsPerMs) +
                   " ms before the first one's validity ended",
               {a, b}});
        }
      }
    }
  }
  return result;
}

namespace {

// How long after its request completed a lease's value may still be written on a node: longer
// than any pause of a node or an instance in the campaign (at most 2.5 s) plus an acquire's wait
// (2 s), so a write that lands late is still inside its lease's window.
constexpr std::int64_t kLateWriteNs = 5'000 * kNsPerMs;
constexpr std::int64_t kNever = INT64_MAX;

// A lease that may have been on the nodes: from its grant's invoke to `until` (kNever when no
// bound is known); `token` 0 when its answer did not say.
struct MaybeLive {
  std::size_t grant;
  std::int64_t from;
  std::int64_t until;
  std::uint64_t token;
};

// When the last write request `op` may have made lives until: completion + ttl + kLateWriteNs.
std::int64_t written_until(const Operation& op) {
  if (op.outcome == Outcome::kPending || op.ttl_ms < 0) return kNever;
  return op.complete_ns + op.ttl_ms * kNsPerMs + kLateWriteNs;
}

// Every acquire and revoke of each name, whatever its outcome (a refused or lost one may have left
// its value on the nodes), with every extend of it, refused or not (it may have lengthened it on
// the nodes it reached).
std::map<std::string, std::vector<MaybeLive>> maybe_live(const std::vector<Operation>& history) {
  std::map<std::string, std::vector<MaybeLive>> leases;
  std::map<std::int64_t, std::int64_t> extended;  // lease → the latest end its extends allow
  for (const Operation& op : history) {
    if (op.f != "extend" || op.lease < 0) continue;
    std::int64_t& until = extended[op.lease];
    until = std::max(until, written_until(op));
  }
  for (std::size_t i = 0; i < history.size(); ++i) {
    const Operation& op = history[i];
    if ((op.f != "acquire" && op.f != "revoke") || !op.mode.empty()) continue;  // locks only
    std::int64_t until = written_until(op);
    const auto it = extended.find(static_cast<std::int64_t>(i));
    if (it != extended.end()) until = std::max(until, it->second);
    leases[op.name].push_back(
        {i, op.invoke_ns, until, op.outcome == Outcome::kOk ? op.token : std::uint64_t{0}});
  }
  return leases;
}

// The windows in which each name was certainly held: the leases checker's windows, cut also where
// an extend that did not succeed was invoked.
std::map<std::string, std::vector<Window>> held_windows(const std::vector<Operation>& history) {
  std::map<std::string, std::vector<Window>> windows = lease_windows(history);
  cut_by_revokes(history, windows);
  std::map<std::int64_t, std::int64_t> doubtful;  // lease → its first extend that did not succeed
  for (const Operation& op : history) {
    if (op.f != "extend" || op.lease < 0 || op.outcome == Outcome::kOk) continue;
    const auto [it, fresh] = doubtful.emplace(op.lease, op.invoke_ns);
    if (!fresh) it->second = std::min(it->second, op.invoke_ns);
  }
  for (auto& [name, list] : windows) {
    for (Window& window : list) {
      const auto it = doubtful.find(static_cast<std::int64_t>(window.grant));
      if (it != doubtful.end()) window.close = std::min(window.close, it->second);
    }
  }
  return windows;
}

// The fault phase, from the "faults-begin" note to the "healed" one (to the end if never healed).
std::pair<std::int64_t, std::int64_t> fault_phase(const std::vector<Operation>& history) {
  std::int64_t begin = kNever;
  std::int64_t end = kNever;
  for (const Operation& op : history) {
    if (op.process >= 0) continue;
    if (op.f == "faults-begin") begin = std::min(begin, op.invoke_ns);
    if (op.f == "healed" && op.invoke_ns >= begin) end = op.invoke_ns;
  }
  return {begin, end};
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

// What `list` (ok) answered for a name it covers that no lease of could have been live, or with a
// token no lease of it that could have been live had.
void check_listed(const std::vector<Operation>& history, std::size_t list,
                  const std::map<std::string, std::vector<MaybeLive>>& leases,
                  CheckResult& result) {
  const Operation& op = history[list];
  for (const Listed& lock : op.listed) {
    const auto found = leases.find(lock.name);
    std::vector<MaybeLive> live;
    if (found != leases.end()) {
      for (const MaybeLive& lease : found->second) {
        if (lease.from < op.complete_ns && lease.until > op.invoke_ns) live.push_back(lease);
      }
    }
    if (live.empty()) {
      result.violations.push_back(
          {lock.name + ": listed, but no lease of it could have been live during the listing",
           {list}});
      continue;
    }
    const bool token_fits = std::any_of(live.begin(), live.end(), [&](const MaybeLive& lease) {
      return lease.token == 0 || lease.token == lock.token;
    });
    if (!token_fits) {
      result.violations.push_back({lock.name + ": listed with token " + std::to_string(lock.token) +
                                       ", which no lease of it that could have been live had",
                                   {list, live.front().grant}});
    }
  }
}

}  // namespace

CheckResult check_listing(const std::vector<Operation>& history) {
  CheckResult result{"listing", 0, {}};
  const std::map<std::string, std::vector<MaybeLive>> leases = maybe_live(history);
  const std::map<std::string, std::vector<Window>> held = held_windows(history);
  const auto [faults_from, faults_to] = fault_phase(history);
  const auto outside_faults = [&, from = faults_from, to = faults_to](
                                  std::int64_t a, std::int64_t b) { return b < from || a > to; };
  for (std::size_t i = 0; i < history.size(); ++i) {
    const Operation& list = history[i];
    if (list.f != "list" || list.outcome != Outcome::kOk) continue;
    ++result.checked;
    check_listed(history, i, leases, result);
    for (const auto& [name, windows] : held) {
      if (!starts_with(name, list.name)) continue;
      const bool listed = std::any_of(list.listed.begin(), list.listed.end(),
                                      [&](const Listed& lock) { return lock.name == name; });
      for (const Window& window : windows) {
        if (listed || !history[window.grant].mode.empty() || window.open > list.invoke_ns ||
            window.close < list.complete_ns ||
            !outside_faults(history[window.grant].invoke_ns, list.complete_ns)) {
          continue;
        }
        result.violations.push_back(
            {name + ": held throughout the listing, but not listed", {window.grant, i}});
        break;
      }
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

CheckResult check_set(const std::vector<Operation>& history,
                      const std::map<std::string, std::string>& final_values) {
  CheckResult result{"set", 0, {}};
  std::map<std::string, std::set<std::string>> final_sets;
  for (const auto& [key, value] : final_values) {
    const auto present = split(value);
    final_sets[key] = std::set<std::string>(present.begin(), present.end());
  }
  for (std::size_t i = 0; i < history.size(); ++i) {
    const Operation& op = history[i];
    const auto final_set = final_sets.find(op.name);
    if (op.f != "write" || op.outcome != Outcome::kOk || final_set == final_sets.end()) continue;
    ++result.checked;
    // The element this write added is the last one of its value.
    const auto elements = split(op.value);
    if (elements.empty() || final_set->second.count(elements.back()) != 0) continue;
    result.violations.push_back(
        {op.name + ": acknowledged element " + elements.back() + " is missing from the final set",
         {i}});
  }
  return result;
}

CheckResult check_liveness(const std::vector<Operation>& history, std::int64_t healed_ns,
                           std::chrono::milliseconds bound, const std::string& name,
                           const std::string& mode) {
  CheckResult result{"liveness", 0, {}};
  std::int64_t first = -1;
  for (const Operation& op : history) {
    if (op.f != "acquire" || op.invoke_ns < healed_ns) continue;
    if ((!name.empty() && op.name != name) || (!mode.empty() && op.mode != mode)) continue;
    ++result.checked;
    if (op.outcome == Outcome::kOk && (first < 0 || op.complete_ns < first)) first = op.complete_ns;
  }
  const std::int64_t limit = healed_ns + bound.count() * kNsPerMs;
  if (first < 0 || first > limit) {
    const std::string what = name.empty() ? "acquire" : "acquire of " + name;
    result.violations.push_back(
        {"no " + what + (mode.empty() ? "" : " in " + mode + " mode") + " succeeded within " +
             std::to_string(bound.count()) + " ms of the fault healing" +
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
    if (!op.request_id.empty()) out << " request=" << op.request_id;
    if (!op.lease_string.empty()) out << " grant=" << grant_label(op.lease_string);
    if (op.repeated) out << " repeated";
    if (!op.detail.empty()) out << " (" << op.detail << ")";
    out << "\n";
  }
  return out.str();
}

}  // namespace fencelock::faults
