#include "nemesis_tools.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <thread>

#include "http_client.h"
#include "workload.h"

namespace fencelock::faults {

using std::chrono::milliseconds;
using namespace std::chrono_literals;

bool NemesisContext::pause_for(std::chrono::milliseconds d) const {
  const auto now = std::chrono::steady_clock::now();
  if (now >= until) return false;
  // In milliseconds: milliseconds::max() ("until the end") in the clock's nanoseconds overflows.
  const auto wake = std::chrono::duration_cast<milliseconds>(until - now) < d ? until : now + d;
  std::this_thread::sleep_until(wake);
  return std::chrono::steady_clock::now() < until;
}

std::vector<std::size_t> NemesisContext::pick_nodes(std::size_t count) const {
  std::vector<std::size_t> nodes(cluster.node_count());
  std::iota(nodes.begin(), nodes.end(), 0);
  std::shuffle(nodes.begin(), nodes.end(), random);
  nodes.resize(std::min(count, nodes.size()));
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

std::string list(const std::vector<std::size_t>& nodes) {
  std::string text;
  for (const std::size_t n : nodes) text += (text.empty() ? "" : ",") + std::to_string(n);
  return text;
}

milliseconds held_lease_left(const History& history, const std::string& name, bool mid_write) {
  const std::vector<Operation> ops = history.operations();
  const std::int64_t now = history.now_ns();
  std::vector<bool> released(ops.size(), false);
  std::vector<bool> read(ops.size(), false);
  std::vector<bool> writing(ops.size(), false);
  for (const Operation& op : ops) {
    if (op.lease < 0) continue;
    const auto lease = static_cast<std::size_t>(op.lease);
    if (op.f == "release") released.at(lease) = true;
    if (op.f == "read" && op.outcome == Outcome::kOk) read.at(lease) = true;
    if (op.f == "write") writing.at(lease) = true;
  }
  // A repeated answer is the lease of the grant it repeats: released with it.
  std::set<std::string> released_leases;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (released[i] && !ops[i].lease_string.empty()) released_leases.insert(ops[i].lease_string);
  }
  // A grant (acquire or revoke) answered before the last revoke was invoked may be taken over.
  std::int64_t last_revoke_ns = -1;
  for (const Operation& op : ops) {
    if (op.f == "revoke" && op.name == name)
      last_revoke_ns = std::max(last_revoke_ns, op.invoke_ns);
  }
  std::int64_t left_ns = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const Operation& op = ops[i];
    if (op.f != "acquire" && op.f != "revoke") continue;
    if (op.name != name || op.outcome != Outcome::kOk || released[i] ||
        released_leases.count(op.lease_string) != 0) {
      continue;
    }
    if (op.complete_ns < last_revoke_ns) continue;
    if (mid_write && (!read[i] || writing[i])) continue;
    const std::int64_t close = op.invoke_ns + (op.waited_ms + op.validity_ms) * 1'000'000;
    left_ns = std::max(left_ns, close - now);
  }
  return milliseconds(left_ns / 1'000'000);
}

std::chrono::steady_clock::time_point wait_for_held_lease(NemesisContext& c,
                                                          const std::string& name, bool mid_write,
                                                          milliseconds limit,
                                                          milliseconds min_left) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  milliseconds left = held_lease_left(c.history, name, mid_write);
  while (left < min_left && std::chrono::steady_clock::now() < give_up) {
    if (!c.pause_for(10ms)) break;
    left = held_lease_left(c.history, name, mid_write);
  }
  return std::chrono::steady_clock::now() + left;
}

std::optional<std::chrono::steady_clock::time_point> hold_lease(
    NemesisContext& c, const std::string& name, milliseconds ttl,
    std::optional<std::size_t> instance) {
  const std::uint16_t port =
      c.cluster.instance_port(instance.value_or(c.random() % c.cluster.serving_count()));
  if (port == 0) return std::nullopt;
  testing::HttpClient http(port, ttl + 2000ms);
  // A 503 (a node slow under load) is tried again soon, at most twice: with one try a cycle, a
  // refused one left some runs without their fault (vacuous).
  for (int tries = 1;; ++tries) {
    Operation acquire;
    acquire.f = "acquire";
    acquire.name = name;
    acquire.process = kLongLeaseProcess;
    const auto sent = std::chrono::steady_clock::now();
    const std::size_t index = c.history.begin(acquire);
    const testing::HttpAnswer granted =
        http.post("/v1/locks/" + name, {{"ttl_ms", ttl.count()}, {"wait_ms", 1000}});
    const nlohmann::json body = granted.status == 200 ? granted.json() : nlohmann::json::object();
    const bool ok = body.is_object() && granted.status == 200;
    const auto waited = milliseconds(ok ? body.value("waited_ms", std::int64_t{0}) : 0);
    const auto validity = milliseconds(ok ? body.value("validity_ms", std::int64_t{0}) : 0);
    c.history.end(index,
                  ok                      ? Outcome::kOk
                  : granted.status == 409 ? Outcome::kFail
                                          : Outcome::kInfo,
                  [&](Operation& op) {
                    op.detail = "nemesis lease " + std::to_string(granted.status) + " " +
                                granted.error_code();
                    if (!ok) return;
                    op.token = body.value("token", std::uint64_t{0});
                    op.validity_ms = validity.count();
                    op.waited_ms = waited.count();
                  });
    if (ok) return sent + waited + validity;
    if (granted.status != 503 || tries == 3 || !c.pause_for(100ms)) return std::nullopt;
  }
}

namespace {

// Begins `op` in the history as the probe's, under grant `lease` with `token`; returns its index.
std::size_t record_probe(History& history, Operation op, std::int64_t lease, std::uint64_t token) {
  op.process = kProbeProcess;
  op.lease = lease;
  op.token = token;
  return history.begin(std::move(op));
}

// The probe's lock-set step under grant `lease`: a fenced read of the set and a fenced write of
// it with one element of its own added.
void probe_write_set(NemesisContext& c, std::int64_t lease, std::uint64_t token) {
  static int probe_elements = 0;
  const WorkloadSettings workload;
  testing::HttpClient store(c.cluster.store_port(), 1000ms);
  const std::map<std::string, std::string> fencing{{"Fencing-Token", std::to_string(token)}};
  const std::string set_path = "/objects/" + workload.set_key;
  Operation read;
  read.f = "read";
  read.name = workload.set_key;
  const std::size_t read_index = record_probe(c.history, read, lease, token);
  const testing::HttpAnswer seen = store.request("GET", set_path, "", fencing);
  const std::string before = seen.status == 200 ? seen.json().value("value", "") : "";
  const bool read_ok = seen.status == 200 || seen.status == 404;
  c.history.end(read_index, read_ok ? Outcome::kOk : Outcome::kInfo, [&](Operation& op) {
    op.value = before;
    op.detail = "probe " + std::to_string(seen.status);
  });
  if (!read_ok) return;
  Operation write;
  write.f = "write";
  write.name = workload.set_key;
  write.value = before + (before.empty() ? "" : ",") + "probe-" + std::to_string(++probe_elements);
  const std::size_t write_index = record_probe(c.history, write, lease, token);
  const testing::HttpAnswer written = store.request("PUT", set_path, write.value, fencing);
  c.history.end(write_index,
                written.status == 200   ? Outcome::kOk
                : written.status == 409 ? Outcome::kFail
                                        : Outcome::kInfo,
                [&](Operation& op) { op.detail = "probe " + std::to_string(written.status); });
}

}  // namespace

void probe_acquire(NemesisContext& c, const std::string& name,
                   std::chrono::steady_clock::time_point until, bool write_set,
                   std::optional<std::size_t> instance) {
  const std::string path = "/v1/locks/" + name;
  const auto record = [&](Operation op, std::int64_t lease, std::uint64_t token) {
    return record_probe(c.history, std::move(op), lease, token);
  };
  while (std::chrono::steady_clock::now() < until) {
    const std::uint16_t port =
        c.cluster.instance_port(instance.value_or(c.random() % c.cluster.serving_count()));
    if (port == 0) {
      std::this_thread::sleep_for(25ms);
      continue;
    }
    testing::HttpClient http(port, 1000ms);
    Operation acquire;
    acquire.f = "acquire";
    acquire.name = name;
    const std::size_t lease = record(acquire, -1, 0);
    const testing::HttpAnswer granted = http.post(path, {{"ttl_ms", 800}, {"wait_ms", 0}});
    // No answer (the instance died) parses as discarded, whose value() throws: an empty object.
    nlohmann::json body = granted.json();
    if (!body.is_object()) body = nlohmann::json::object();
    const Outcome outcome = granted.status == 200   ? Outcome::kOk
                            : granted.status == 409 ? Outcome::kFail
                                                    : Outcome::kInfo;
    const std::uint64_t token = body.value("token", std::uint64_t{0});
    c.history.end(lease, outcome, [&](Operation& op) {
      op.detail = "probe " + std::to_string(granted.status) + " " + granted.error_code();
      if (granted.status != 200) return;
      op.token = token;
      op.validity_ms = body.value("validity_ms", std::int64_t{0});
    });
    if (granted.status != 200) {
      std::this_thread::sleep_for(25ms);
      continue;
    }
    const auto lease_index = static_cast<std::int64_t>(lease);
    if (write_set) probe_write_set(c, lease_index, token);
    std::this_thread::sleep_for(100ms);
    Operation release;
    release.f = "release";
    release.name = name;
    const std::size_t index = record(release, lease_index, 0);
    const testing::HttpAnswer released = http.del(path, {{"lease", body.value("lease", "")}});
    c.history.end(index, released.status == 200 ? Outcome::kOk : Outcome::kInfo,
                  [&](Operation& op) { op.detail = "probe " + std::to_string(released.status); });
    return;
  }
}

}  // namespace fencelock::faults
