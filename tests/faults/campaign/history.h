// The record of one campaign run, Jepsen style: every client operation with the monotonic time it
// was invoked and completed and what it answered. Checkers read it; it is written out as JSON lines
// (an "invoke" and a completion event per operation, in time order) for people.
//
// Outcomes: kOk (the operation took effect and answered), kFail (it certainly did not take effect:
// a refusal such as 409), kInfo (unknown: a timeout, a 503, a closed connection — it may have taken
// effect). Times are nanoseconds on the steady clock since the run began.
//
// Thread safety: begin() and end() may be called from any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace fencelock::faults {

enum class Outcome { kPending, kOk, kFail, kInfo };

// One lock a listing answered.
struct Listed {
  std::string name;
  std::uint64_t token = 0;
};

struct Operation {
  int process = 0;   // the client that ran it; one operation at a time per process
  std::string f;     // "acquire", "extend", "release", "draw", "read", "write", "list"
  std::string name;  // lock name, token counter name or store key; list: the prefix
  // acquire of a read/write lock: "read" or "write" (reads may share a name); "" for a lock.
  std::string mode;
  std::int64_t invoke_ns = 0;
  std::int64_t complete_ns = 0;
  Outcome outcome = Outcome::kPending;
  std::int64_t lease = -1;        // acquire, extend, release: which grant (the acquire's index)
  std::uint64_t token = 0;        // acquire, draw, read, write: the token answered or sent
  std::int64_t validity_ms = -1;  // acquire, extend (ok)
  std::int64_t waited_ms = 0;     // acquire (ok)
  std::string value;              // read: what was read; write: what was written
  std::string detail;             // status and error code, for people
  std::string request_id;         // acquire: the request_id it sent, "" for none
  std::string lease_string;       // acquire, revoke (ok): the lease answered, `<token>.<proof>`
  bool repeated = false;          // acquire (ok): the answer said "repeated": an earlier grant
  std::int64_t ttl_ms = -1;       // acquire, revoke, extend: the ttl asked for, -1 if not recorded
  int pages = 0;                  // list: the pages it read (ok: all of them, up to next = null)
  std::vector<Listed> listed;     // list (ok): every lock its pages answered, in order
};

class History {
 public:
  History();

  std::int64_t now_ns() const;
  // Records an invocation now; returns its index for end().
  std::size_t begin(Operation op);
  // Completes operation `index` now with `outcome`; `fill` sets the answer's fields.
  template <typename Fill>
  void end(std::size_t index, Outcome outcome, Fill&& fill) {
    const std::int64_t at = now_ns();
    const std::lock_guard<std::mutex> guard(mutex_);
    Operation& op = operations_.at(index);
    op.complete_ns = at;
    op.outcome = outcome;
    fill(op);
  }
  void end(std::size_t index, Outcome outcome) {
    end(index, outcome, [](Operation&) {});
  }
  // A note in the history (a nemesis step): an operation of process -1 that completes at once.
  void note(const std::string& what, const std::string& detail = "");

  // A copy, for the checkers (after the workload stopped).
  std::vector<Operation> operations() const;
  void write_jsonl(const std::filesystem::path& file) const;

 private:
  std::int64_t origin_ns_;
  mutable std::mutex mutex_;
  std::vector<Operation> operations_;
};

const char* to_string(Outcome outcome);

// A lease string cut to its token and the first 12 characters of its proof: enough to tell grants
// apart in a history people read, without writing the whole secret out.
std::string grant_label(const std::string& lease_string);

}  // namespace fencelock::faults
