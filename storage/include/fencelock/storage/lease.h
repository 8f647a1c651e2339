// What the engine hands out and reports: leases, extensions and lock status.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fencelock::storage {

// The longest holder description an acquire may carry (AcquireRequest::holder), in bytes.
inline constexpr std::size_t kMaxHolderLength = 200;

// True iff `holder` can describe a lease's holder: at most kMaxHolderLength bytes, no control
// character (C0, DEL, C1 in UTF-8) and no line or paragraph separator (U+2028, U+2029).
bool is_valid_holder(std::string_view holder) noexcept;

// The longest request id an acquire may carry (AcquireRequest::request_id), in bytes.
inline constexpr std::size_t kMaxRequestIdLength = 64;

// True iff `id` can name an acquire request: 1 to kMaxRequestIdLength printable ASCII characters
// (0x21..0x7e).
bool is_valid_request_id(std::string_view id) noexcept;

struct AcquireRequest {
  std::string name;                  // a valid lock name (fencelock/names.h)
  std::chrono::milliseconds ttl{0};  // within [min_ttl, max_ttl]
  // How long to keep trying while the lock is held by another lease, within [0, max_wait]. Every
  // acquire makes at least one attempt, however short its wait; it never waits out an outage
  // (kUnavailable is answered as soon as an attempt finds too few nodes, or the token source down).
  std::chrono::milliseconds wait{0};
  // Who the lease is for (an API key's id; "" without keys): the lease's proof is bound to it, so
  // only a claim with the same owner extends or releases it. At most kMaxLeaseOwnerLength
  // characters of [A-Za-z0-9._-] (checked: kInvalidArgument).
  std::string owner;
  // What the client said it is (the API's "owner": a host:pid, a job id): stored with the lease on
  // the nodes and shown by inspect (LockStatus::holder); never checked. is_valid_holder() or
  // kInvalidArgument.
  std::string holder{};
  // Optional (a single lock's acquire only): names this acquire, so that asking again after a lost
  // answer is not refused by its own grant. While the lease that an acquire with the same owner,
  // name and request id was granted is held on a quorum, another such acquire answers that same
  // lease (proof, token) with its remaining validity instead of kLocked — on any engine sharing
  // the nodes. "" for none; otherwise is_valid_request_id() or kInvalidArgument.
  std::string request_id{};
};

// A granted lock. The proof (with the token) is what release and extend prove ownership with:
// never log it. See lease_secret.h.
struct Lease {
  std::string name;
  std::string proof;        // kLeaseProofLength hex digits, bound to `token`
  std::uint64_t token = 0;  // fencing token; 0 only when the engine runs without a token source
  std::chrono::milliseconds ttl{0};
  // How long after `started` the lease may be trusted (ttl − elapsed − drift, whole ms, >= 1 ms).
  std::chrono::milliseconds validity{0};
  // Engine steady-clock time taken before the first Redis request of the granting attempt.
  std::chrono::steady_clock::time_point started{};
  // Time from the start of the acquire call to `started` (whole ms, rounded down): how long it
  // waited for the lock. A client that adds it and `validity` to its own send time gets a deadline
  // never later than the truth, however long the acquire waited.
  std::chrono::milliseconds waited{0};
  // True when this answer repeats an earlier grant to the same request
  // (AcquireRequest::request_id): the same proof and token, validity counted from this answer's own
  // quorum.
  bool repeated = false;

  std::chrono::steady_clock::time_point valid_until() const { return started + validity; }
};

// What a holder presents to extend or release its lease: the token it was granted with, the proof
// that came with it, and the owner it was granted to (AcquireRequest::owner). A claim whose token
// or owner is not the lease's own is refused (kInvalidArgument).
struct LeaseClaim {
  std::uint64_t token = 0;
  std::string proof;
  std::string owner;
  // A release only: leave the lease alone if a repeat of its request took it over
  // (AcquireRequest::request_id) — what a grant whose answer never reached its client is released
  // with, since the client's repeat may already hold it.
  bool unless_repeated = false;
};

// A successful extend: the lease's key expires no earlier than `ttl` after the extend, and may be
// trusted for `validity` after `started` (taken before the first Redis request of the extend).
struct Extension {
  std::uint64_t token = 0;  // the lease's token, verified by the nodes
  std::chrono::milliseconds ttl{0};
  std::chrono::milliseconds validity{0};
  std::chrono::steady_clock::time_point started{};
};

// What inspect learned. Never contains the holder's secret.
struct LockStatus {
  bool held = false;  // one lease value is present on a quorum of voting nodes
  // When held: time until fewer than a quorum of nodes still hold it.
  std::optional<std::chrono::milliseconds> remaining;
  // When held: the holder's fencing token (for a name held by a lock set, that name's token), and
  // what the holder said it is (AcquireRequest::holder). No token when the lease was granted
  // without one (or written by an older fencelockd).
  std::optional<std::uint64_t> token;
  std::string holder{};
};

// ---- Listing held locks (LockEngine::list) ----

// The most names one page of a listing may ask for.
inline constexpr std::size_t kMaxListLimit = 1000;

// One page of the held locks whose names start with `prefix`: `limit` (1..kMaxListLimit) is the
// number of names after which the page ends; `cursor` is "" for the first page, else a page's
// `next`.
struct ListRequest {
  std::string prefix;  // "" or up to kMaxNameLength characters of the name alphabet
  std::size_t limit = 100;
  std::string cursor;
  // The names the caller may see (null: all). Others are neither answered nor counted, so what a
  // page holds and where it ends never depend on them.
  std::function<bool(std::string_view name)> visible{};
};

// A lock held on a quorum (also a name held by a lock set), as LockStatus tells it.
struct HeldLock {
  std::string name;
  std::optional<std::uint64_t> token;
  std::string holder;
  std::chrono::milliseconds remaining{0};
};

// A page: about `limit` names (the last bounded step's rest may run over by a few, and a page may
// hold fewer, even none, and still have a next), and `next`, the cursor of the following page
// ("" once the listing is complete).
struct LockPage {
  std::vector<HeldLock> locks;
  std::string next;
};

// ---- Lock sets: several names under one lease (LockEngine::acquire_set) ----

// The most names one lock set may hold.
inline constexpr std::size_t kMaxLockSetNames = 16;

// A lease over every name in `names` at once: all of them or none, on each node atomically (one
// script per node), with one fencing token per name. ttl, wait and owner as in AcquireRequest.
struct LockSetRequest {
  std::vector<std::string> names;  // 1..kMaxLockSetNames distinct valid names, any order
  std::chrono::milliseconds ttl{0};
  std::chrono::milliseconds wait{0};
  std::string owner;
  std::string holder{};
};

// A granted lock set. Names are in canonical (sorted) order and tokens[i] is names[i]'s fencing
// token, drawn from the counter of that name (the same counter as the single lock of that name).
// The proof binds the whole token list; never log it.
struct LockSetLease {
  std::vector<std::string> names;
  std::vector<std::uint64_t> tokens;
  std::string proof;
  std::chrono::milliseconds ttl{0};
  std::chrono::milliseconds validity{0};
  std::chrono::steady_clock::time_point started{};
  std::chrono::milliseconds waited{0};

  std::chrono::steady_clock::time_point valid_until() const { return started + validity; }
};

// What a lock set's holder presents to extend or release it: its tokens in the canonical order of
// its names, its proof and its owner.
struct LockSetClaim {
  std::vector<std::uint64_t> tokens;
  std::string proof;
  std::string owner;
};

// A successful extend of a lock set (see Extension); tokens in the canonical order of the names.
struct LockSetExtension {
  std::vector<std::uint64_t> tokens;
  std::chrono::milliseconds ttl{0};
  std::chrono::milliseconds validity{0};
  std::chrono::steady_clock::time_point started{};
};

// ---- Counting semaphores (LockEngine::acquire_permit) ----

// The most permits a semaphore may have.
inline constexpr std::uint32_t kMaxPermits = 64;

// One permit of semaphore `name`, which has `permits` permits in all (1..kMaxPermits). A live
// semaphore with another permit count refuses it (kPermitsMismatch). ttl, wait, owner as in
// AcquireRequest.
struct PermitRequest {
  std::string name;
  std::uint32_t permits = 0;
  std::chrono::milliseconds ttl{0};
  std::chrono::milliseconds wait{0};
  std::string owner;
  std::string holder{};
};

// A granted permit: slot `slot` (0..permits-1) of the semaphore, held like a lock (at most one
// live permit per slot, hence at most `permits` live permits). Its token comes from the counter
// of `name` (shared with the lock of that name). The proof is as Lease's; never log it.
struct Permit {
  std::string name;
  std::uint32_t permits = 0;
  std::uint32_t slot = 0;
  std::string proof;
  std::uint64_t token = 0;
  std::chrono::milliseconds ttl{0};
  std::chrono::milliseconds validity{0};
  std::chrono::steady_clock::time_point started{};
  std::chrono::milliseconds waited{0};

  std::chrono::steady_clock::time_point valid_until() const { return started + validity; }
};

// What inspect_semaphore learned. Never contains a holder's secret.
struct SemaphoreStatus {
  std::uint32_t permits = 0;  // the live semaphore's permit count; 0 when no permit is live
  std::uint32_t held = 0;     // permits held on a quorum of voting nodes
};

// ---- Read/write locks (LockEngine::acquire_rw) ----

// Any number of read grants of a name at a time, or one write grant. A writer that waits keeps
// new readers out (it is not starved by a stream of them). Every grant has a token from the
// counter of `name` (shared with the lock of that name), so a write grant's token is above that
// of every grant before it. A read/write lock and the lock of the same name do not exclude each
// other.
enum class RwMode : std::uint8_t { kRead, kWrite };

// ttl, wait, owner and holder as in AcquireRequest.
struct RwLockRequest {
  std::string name;
  RwMode mode = RwMode::kRead;
  std::chrono::milliseconds ttl{0};
  std::chrono::milliseconds wait{0};
  std::string owner;
  std::string holder{};
};

// What inspect_rw learned: each grant held on a quorum of voting nodes (read grants, or one
// write grant), and whether a writer waits. Never contains a holder's secret.
struct RwLockStatus {
  struct Grant {
    RwMode mode = RwMode::kRead;
    std::uint64_t token = 0;
    std::string holder;  // AcquireRequest::holder
    std::chrono::milliseconds remaining{0};
  };
  std::vector<Grant> grants;  // by token
  bool writer_waiting = false;
};

// ---- Listings of semaphores and read/write locks (LockEngine::list_semaphores, list_rwlocks) ----

// A semaphore with a permit held on a quorum, as inspect_semaphore tells it.
struct ListedSemaphore {
  std::string name;
  SemaphoreStatus status;
};

// A page of a semaphore listing, as LockPage for locks.
struct SemaphorePage {
  std::vector<ListedSemaphore> semaphores;
  std::string next;
};

// A read/write lock with a grant held on a quorum, as inspect_rw tells it.
struct ListedRwLock {
  std::string name;
  RwLockStatus status;
};

// A page of a read/write lock listing, as LockPage for locks.
struct RwLockPage {
  std::vector<ListedRwLock> rwlocks;
  std::string next;
};

}  // namespace fencelock::storage
