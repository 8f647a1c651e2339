#include "history.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

namespace fencelock::faults {

namespace {

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string grant_label(const std::string& lease_string) {
  const std::size_t dot = lease_string.find('.');
  return dot == std::string::npos ? lease_string : lease_string.substr(0, dot + 13);
}

const char* to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::kOk:
      return "ok";
    case Outcome::kFail:
      return "fail";
    case Outcome::kInfo:
      return "info";
    case Outcome::kPending:
      break;
  }
  return "pending";
}

History::History() : origin_ns_(steady_ns()) {}

std::int64_t History::now_ns() const {
  return steady_ns() - origin_ns_;
}

std::size_t History::begin(Operation op) {
  op.invoke_ns = now_ns();
  op.outcome = Outcome::kPending;
  const std::lock_guard<std::mutex> guard(mutex_);
  operations_.push_back(std::move(op));
  return operations_.size() - 1;
}

void History::note(const std::string& what, const std::string& detail) {
  Operation op;
  op.process = -1;
  op.f = what;
  op.detail = detail;
  const std::size_t index = begin(std::move(op));
  end(index, Outcome::kOk);
}

std::vector<Operation> History::operations() const {
  const std::lock_guard<std::mutex> guard(mutex_);
  return operations_;
}

void History::write_jsonl(const std::filesystem::path& file) const {
  struct Event {
    std::int64_t at;
    std::size_t index;
    bool invoke;
  };
  const std::vector<Operation> ops = operations();
  std::vector<Event> events;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    events.push_back({ops[i].invoke_ns, i, true});
    if (ops[i].outcome != Outcome::kPending) events.push_back({ops[i].complete_ns, i, false});
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.at < b.at; });
  std::ofstream out(file, std::ios::trunc);
  for (const Event& e : events) {
    const Operation& op = ops[e.index];
    nlohmann::json line{{"time_ns", e.at},
                        {"process", op.process},
                        {"type", e.invoke ? "invoke" : to_string(op.outcome)},
                        {"f", op.f},
                        {"index", e.index}};
    if (!op.name.empty()) line["name"] = op.name;
    if (!op.mode.empty()) line["mode"] = op.mode;
    if (op.lease >= 0) line["lease"] = op.lease;
    if (e.invoke) {
      if (!op.request_id.empty()) line["request_id"] = op.request_id;
      if (op.ttl_ms >= 0) line["ttl_ms"] = op.ttl_ms;
      if (op.f == "write") line["value"] = op.value;
      if (op.f == "write" || op.f == "read") line["token"] = op.token;
    } else {
      if (op.token != 0) line["token"] = op.token;
      if (op.validity_ms >= 0) line["validity_ms"] = op.validity_ms;
      if (op.waited_ms != 0) line["waited_ms"] = op.waited_ms;
      if (!op.lease_string.empty()) line["grant"] = grant_label(op.lease_string);
      if (op.repeated) line["repeated"] = true;
      if (op.f == "read") line["value"] = op.value;
      if (op.f == "list") {
        line["pages"] = op.pages;
        nlohmann::json listed = nlohmann::json::array();
        for (const Listed& lock : op.listed)
          listed.push_back({{"name", lock.name}, {"token", lock.token}});
        line["listed"] = listed;
      }
      if (!op.detail.empty()) line["detail"] = op.detail;
    }
    out << line.dump() << '\n';
  }
}

}  // namespace fencelock::faults
