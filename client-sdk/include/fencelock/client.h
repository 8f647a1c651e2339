// The fencelock C++ client: talks HTTP/1.1 to fencelockd (docs/api.md) over a small pool of
// keep-alive connections, plain or over TLS ("https://" endpoints).
//
// Thread safety: a Client may be used from any number of threads at once; each call takes an idle
// connection from the pool (or opens one) and returns it afterwards. Every call is blocking and
// bounded by the request timeout (acquire: plus its wait).
//
// Retries: calls that are safe to repeat (extend, release, status, semaphore_status, the listings,
// next_token, current_token) are retried on transport and TLS errors and 503s, up to max_retries
// times, on the next endpoint. acquire (which names its request) is also retried on transport and
// TLS errors after its request may have been delivered — the service answers the same grant again —
// but not on a 503. acquire_set, acquire_permit and revoke are retried only when the request could
// not even be sent (nothing can have been granted).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fencelock/lease.h"
#include "fencelock/result.h"

namespace fencelock {

struct ClientOptions {
  // fencelockd base URLs, "http://HOST:PORT" or "https://HOST:PORT", tried in order (the next one
  // after a transport error). Default {"http://127.0.0.1:8080"}; 1..16 endpoints. HOST is an IP
  // address ("[::1]" for IPv6) or a DNS name ("https://locks.internal:8443"), resolved whenever a
  // new connection is opened, within connect_timeout; every address it has is tried in turn. A
  // name that does not resolve is kTransport ("cannot resolve NAME: …", or "resolving NAME timed
  // out"), and the next endpoint is tried.
  std::vector<std::string> endpoints = {"http://127.0.0.1:8080"};
  // Connecting, TLS handshake included. Default 1 s; 1 ms .. 60 s.
  std::chrono::milliseconds connect_timeout{1000};
  // One request's round trip, excluding an acquire's wait. Default 5 s; 1 ms .. 10 min.
  std::chrono::milliseconds request_timeout{5000};
  // Extra attempts of retry-safe calls. Default 2; 0..10.
  int max_retries = 2;
  // Pause before a retry, doubled each time. Default 50 ms; 0 .. 10 s.
  std::chrono::milliseconds retry_backoff{50};
  // Idle keep-alive connections kept per endpoint. Default 8; 0..1024.
  std::size_t max_idle_connections = 8;
  // The API key's secret, sent as "Authorization: Bearer <api_key>" on every request when not
  // empty (fencelockd with --auth-file; docs/operations.md). Printable ASCII, at most 256
  // characters. Never logged, never part of an error message.
  std::string api_key;

  // TLS, for "https://" endpoints only (TLS 1.2 or newer): with any of these three set, an
  // "http://" endpoint is refused by create(). The server's certificate must chain to a CA in
  // `ca_file` (PEM; default "": the system's trust store) and name the endpoint's host as written
  // in a subjectAltName — a name as a DNS name (also sent as SNI), an IP address as an IP
  // address; the subject's CN is never used. Otherwise every call fails with kTls and nothing is
  // sent.
  std::string ca_file;
  // A client certificate (PEM, with its chain) and its unencrypted private key, for a fencelockd
  // that requires one (--tls-client-ca, mutual TLS). Both or neither; default none.
  std::string cert_file;
  std::string key_file;

  // The defaults, with what the CLI reads from the environment: FENCELOCK_ENDPOINT (comma-
  // separated endpoints), FENCELOCK_API_KEY, FENCELOCK_CACERT (ca_file), FENCELOCK_CERT and
  // FENCELOCK_KEY. Unset or empty variables leave the default.
  static ClientOptions from_environment();
};

struct LockStatus {
  bool held = false;
  std::optional<std::chrono::milliseconds> remaining;  // set when held
  // When held: the holder's fencing token (a lock set's token for this name), and what the holder
  // sent as its owner when it acquired (unset when it sent none). Unset when not held.
  std::optional<std::uint64_t> token;
  std::optional<std::string> owner;
  // The name's current token (GET /v1/tokens/{name}): at or above every token handed out for it,
  // below every later one — its last token with the SQLite and Redis sources, etcd's revision with
  // the etcd source (docs/api.md). 0 in a watch's answer.
  std::uint64_t last_token = 0;
  // A watch's answer only: the lock is no longer held with the token watched (false: the wait
  // ran out with it unchanged).
  bool changed = false;
};

// GET /v1/semaphores/{name}.
struct SemaphoreStatus {
  std::uint32_t permits = 0;  // the live semaphore's permit count; 0 when no permit is live
  std::uint32_t held = 0;     // permits held now
};

// GET /v1/rwlocks/{name}: the grants held on a majority, by token.
struct RwLockStatus {
  struct Holder {
    std::uint64_t token = 0;
    std::optional<std::string> owner;
    std::chrono::milliseconds remaining{0};
  };
  std::optional<LeaseKind> mode;  // kRead or kWrite while held; unset when free
  std::vector<Holder> holders;
  bool writer_waiting = false;  // new reads are refused meanwhile
};

// One lock of a listing (GET /v1/locks): held on a majority, as status() tells it.
struct HeldLock {
  std::string name;
  std::optional<std::uint64_t> token;
  std::optional<std::string> owner;
  std::chrono::milliseconds remaining{0};
};

// One page of a listing; `next` is the cursor of the following page, unset once complete.
struct LockListing {
  std::vector<HeldLock> locks;
  std::optional<std::string> next;
};

// One semaphore of a listing (GET /v1/semaphores): one with a permit held on a majority, its
// status as semaphore_status() tells it.
struct ListedSemaphore {
  std::string name;
  SemaphoreStatus status;
};

// One page of a semaphore listing; `next` as LockListing's.
struct SemaphoreListing {
  std::vector<ListedSemaphore> semaphores;
  std::optional<std::string> next;
};

// One read/write lock of a listing (GET /v1/rwlocks): one with a grant held on a majority, its
// status as rwlock_status() tells it.
struct ListedRwLock {
  std::string name;
  RwLockStatus status;
};

// One page of a read/write lock listing; `next` as LockListing's.
struct RwLockListing {
  std::vector<ListedRwLock> rwlocks;
  std::optional<std::string> next;
};

// A fresh request id for Client::acquire (its default): 128 random bits from OpenSSL's generator
// in hex, or "" if it fails. One per acquire, reused only to ask for the same acquire again.
std::string new_request_id();

class Client {
 public:
  // Reads the TLS files when an endpoint is https://. Errors: kInvalidArgument (a malformed
  // endpoint, an option out of bounds, a TLS file that cannot be read or does not hold PEM, a key
  // that does not match its certificate, a TLS file given with an http:// endpoint).
  static Result<Client> create(ClientOptions options = {});

  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;
  ~Client();

  // Acquires `name` for `ttl`, waiting up to `wait` while someone else holds it. `owner` (optional,
  // <= 200 bytes, e.g. host:pid) is kept with the lease: status() answers it, and the service's
  // request log shows it. Every call names its request (`request_id`; a fresh random one when
  // empty), so when an answer is lost (a timeout, a reset) the call asks again — up to
  // max_retries — and the service answers the grant it already made instead of refusing it as
  // held (docs/api.md, "Asking again"). Errors: kLocked (held, and the wait ran
  // out; error().retry_after says for how much longer when known), kUnavailable,
  // kInvalidArgument, kTransport.
  Result<Lease> acquire(std::string_view name, std::chrono::milliseconds ttl,
                        std::chrono::milliseconds wait = std::chrono::milliseconds(0),
                        std::string_view owner = {}, std::string_view request_id = {});

  // Takes `name` whatever lease holds it, with a token above the revoked lease's (POST
  // /v1/locks/{name}/revoke; the key needs the `admin` right). The revoked holder's extend and
  // release answer kNotHeld, and a fenced store refuses its old token once this lease's token was
  // used: revoke only a lock whose resource checks tokens. Never waits; never retried once sent.
  // ttl, owner as acquire. Errors: kUnavailable, kInvalidArgument, kDenied, kTransport.
  Result<Lease> revoke(std::string_view name, std::chrono::milliseconds ttl,
                       std::string_view owner = {});

  // Acquires every name of `names` at once under one lease (a lock set): all of them or none,
  // never a part. `names` in any order, 1..16 distinct valid names; the lease holds them sorted,
  // with one fencing token per name (Lease::token_of; each from that name's counter, the one its
  // single lock uses). A set and a single lock of the same name exclude each other. ttl, wait,
  // owner and errors as acquire (kLocked when any name is held by another lease; kInvalidArgument
  // for a duplicate, a bad name or more than 16 names, refused before sending).
  Result<Lease> acquire_set(const std::vector<std::string>& names, std::chrono::milliseconds ttl,
                            std::chrono::milliseconds wait = std::chrono::milliseconds(0),
                            std::string_view owner = {});

  // Acquires one permit of the counting semaphore `name`, which has `permits` permits (1..64): at
  // most that many permits are live at once, each a lease on one slot (Lease::slot). Its token is
  // drawn from `name`'s counter (shared with the lock `name`) and grows with every grant. ttl,
  // wait, owner as acquire. Errors: kLocked (every permit is held, and the wait ran out;
  // retry_after when known), kPermitsMismatch (the semaphore is live with another permit count,
  // which the message names), kUnavailable, kInvalidArgument (permits out of 1..64, a bad name:
  // refused before sending), kTransport.
  Result<Lease> acquire_permit(std::string_view name, std::uint32_t permits,
                               std::chrono::milliseconds ttl,
                               std::chrono::milliseconds wait = std::chrono::milliseconds(0),
                               std::string_view owner = {});

  // A read grant (shared with other reads) or a write grant (alone) of the read/write lock
  // `name` (POST /v1/rwlocks/{name}). A writer that waits keeps new readers out while it waits;
  // a write grant's token is above every earlier grant's of the name (its counter is the lock
  // `name`'s, which a read/write lock does not exclude). ttl, wait, owner as acquire; retried only
  // when the request could not be sent. Errors: kLocked (held against this mode, and the wait ran
  // out; retry_after when known), kUnavailable, kInvalidArgument, kTransport.
  Result<Lease> acquire_read(std::string_view name, std::chrono::milliseconds ttl,
                             std::chrono::milliseconds wait = std::chrono::milliseconds(0),
                             std::string_view owner = {});
  Result<Lease> acquire_write(std::string_view name, std::chrono::milliseconds ttl,
                              std::chrono::milliseconds wait = std::chrono::milliseconds(0),
                              std::string_view owner = {});
  // The read/write lock's grants. Errors as status().
  Result<RwLockStatus> rwlock_status(std::string_view name);

  // Resets the lease's ttl and moves its deadline — a lock's, a lock set's (all its names at
  // once), a permit's or a read/write lock grant's. `within` bounds the whole call, retries
  // included (default: the request timeout per attempt). Errors: kNotHeld (expired, released or
  // taken over: stop using it), kUnavailable, kInvalidArgument, kTransport.
  Status extend(Lease& lease, std::chrono::milliseconds ttl,
                std::optional<std::chrono::milliseconds> within = std::nullopt);

  // Releases the lease (a lock, every name of a set, a permit): true iff it still held it.
  // Idempotent. `within` bounds the whole call, retries included (default: the request timeout
  // per attempt). Errors: kUnavailable, kInvalidArgument, kTransport.
  Result<bool> release(const Lease& lease,
                       std::optional<std::chrono::milliseconds> within = std::nullopt);

  // How many permits of semaphore `name` are held, and of how many. Errors: kUnavailable,
  // kInvalidArgument, kDenied, kTransport.
  Result<SemaphoreStatus> semaphore_status(std::string_view name);

  Result<LockStatus> status(std::string_view name);
  // Waits until `name` is no longer held with `after_token` — released, expired, revoked or taken
  // again — and answers its status with `changed` set, or after `wait` (0..1 h; the server cuts
  // it to its --max-wait) with the status unchanged and `changed` false. A free lock answers at
  // once. To follow a lock, watch again with the token answered. The call, retries included,
  // takes at most `wait` plus the request timeout. Errors as status(), and kInternal from a
  // fencelockd older than watch.
  Result<LockStatus> watch(std::string_view name, std::uint64_t after_token,
                           std::chrono::milliseconds wait = std::chrono::seconds(30));
  // One page of the locks held whose names start with `prefix` (GET /v1/locks): pass the page's
  // `next` as `cursor` until it is unset. A page may hold fewer than `limit` (1..1000) names, even
  // none, and still have a next; a name held throughout is listed (twice if a lock node failed
  // meanwhile). Errors: kInvalidArgument, kDenied (the key needs `read`; names it may not read are
  // left out), kUnavailable (then start the listing again), kTransport.
  Result<LockListing> list_locks(std::string_view prefix = {}, std::size_t limit = 100,
                                 std::string_view cursor = {});
  // One page of the semaphores with a permit held whose names start with `prefix` (GET
  // /v1/semaphores), and one of the read/write locks with a grant held (GET /v1/rwlocks): query,
  // paging and errors as list_locks(). One that stays held throughout the listing is listed, maybe
  // more than once (a lock node failed or was late, or its grants are held on different sets of
  // nodes); each entry says what the nodes held when its page was made.
  Result<SemaphoreListing> list_semaphores(std::string_view prefix = {}, std::size_t limit = 100,
                                           std::string_view cursor = {});
  Result<RwLockListing> list_rwlocks(std::string_view prefix = {}, std::size_t limit = 100,
                                     std::string_view cursor = {});
  Result<std::uint64_t> next_token(std::string_view name);
  Result<std::uint64_t> current_token(std::string_view name);

  const ClientOptions& options() const noexcept;

  class Impl;

 private:
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fencelock
