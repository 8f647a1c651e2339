// The properties a campaign run must keep, checked over its history. Pure functions of the
// history; each answers how many operations it judged and every violation with the operations
// that show it.
//
//   tokens    per name, tokens answered by acquires, revokes and draws are unique, and a grant or
//             draw that completed before another was invoked has the smaller token (real-time
//             order). A token may be answered again only by an acquire marked repeated with the
//             same request id and lease as the grant's answer; a repeat is judged in real-time
//             order from its request's first attempt's invoke (that attempt drew the token).
//   leases    per name, no two validity windows overlap, except two read grants of a read/write
//             lock (at most one writer, or only readers, at any time). A window opens when the
//             grant's (acquire's or revoke's) answer arrived and closes at the client's own
//             deadline — invoke + waited_ms + validity_ms, pushed out by successful extends (extend
//             invoke + validity_ms) — or when the client invoked its release, whichever is first.
//             Both ends are conservative (the real lease began before the answer and ended after
//             the deadline), so an overlap is a real violation of what the service promised. A
//             revoke gives up mutual exclusion with the lease it takes over, on purpose: one
//             invoked at t, granted or not (a failed one may have overwritten the lease on some
//             nodes), ends every window of its name that opened before t at t; a granted one also
//             ends, at its completion, the windows of grants invoked before it completed with a
//             smaller token (granted before it took effect, answered after its invoke). Its own
//             window is then checked like any other grant's. An acquire that named its request
//             (request_id) may be answered again, "repeated": the answers of one request with the
//             same lease are one holder, whose windows may overlap each other but no other
//             holder's; a release ends them all.
//   requests  per request id, no answer came while an earlier answer of the same request with
//             another lease was within its window (as in leases, after releases and revokes):
//             one request, two grants. An answer marked repeated needs another attempt of its
//             request invoked before it completed.
//   listing   per listing that read all its pages (invoked → completed): (1) every name it
//             listed may have been held during it: an acquire or revoke of the name, whatever its
//             outcome, was invoked before the listing completed and may have lived past its
//             invoke (its request's or an extend's completion + its ttl + a late-write margin;
//             forever when the ttl or completion is unknown); (2) a listed token is the token of
//             such a lease, unless one of them has no known token; (3) a name it covers that was
//             certainly held throughout it (a leases window, also cut by an extend that did not
//             succeed, open before its invoke and closing after its completion) is listed —
//             judged only when the grant and the listing are both before or both after the fault
//             phase (lost node data or cut links may leave a valid lease on a minority).
//   store     per key, the resource store never applied a write whose token is older than a token
//             it had applied or fence-read before (read from the store's own operation log).
//   set       per set key, every element whose write the store acknowledged is in the final set
//             (lock-set).
//   liveness  after `healed_ns`, some acquire (of `name`, in `mode`, when given) succeeds within
//             `bound`.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "history.h"

namespace fencelock::faults {

struct Violation {
  std::string message;
  std::vector<std::size_t> operations;  // indices into the history that show it
};

struct CheckResult {
  std::string property;
  std::size_t checked = 0;  // operations (or log entries) judged
  std::vector<Violation> violations;
  bool ok() const { return violations.empty(); }
};

// One line of the resource store's log (examples/resource-store).
struct StoreEntry {
  std::uint64_t seq = 0;
  std::string op;  // "write" or "fenced_read"
  std::string key;
  std::uint64_t token = 0;
  std::string outcome;  // "applied", "applied_unfenced", "rejected_stale", "fenced"
};

CheckResult check_tokens(const std::vector<Operation>& history);
CheckResult check_leases(const std::vector<Operation>& history);
CheckResult check_requests(const std::vector<Operation>& history);
CheckResult check_listing(const std::vector<Operation>& history);
CheckResult check_store(const std::vector<StoreEntry>& log);
// `final_values`: per set key, the set as last read (elements separated by ','); writes to other
// keys are not judged.
CheckResult check_set(const std::vector<Operation>& history,
                      const std::map<std::string, std::string>& final_values);
// Judges the acquires of `name` in `mode` ("": any name, any mode); a violation names them.
CheckResult check_liveness(const std::vector<Operation>& history, std::int64_t healed_ns,
                           std::chrono::milliseconds bound, const std::string& name = "",
                           const std::string& mode = "");

// Parses the store's JSON-lines log; malformed lines are skipped.
std::vector<StoreEntry> parse_store_log(const std::string& text);

// The smallest window of the history that shows a violation: the operations it names and every
// operation on the same names that overlaps them in time, one per line, in invoke order.
std::string describe(const std::vector<Operation>& history, const Violation& violation);

}  // namespace fencelock::faults
