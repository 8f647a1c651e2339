// What a lock key holds on a node (lua_scripts.h): the lease value (48 hex digits, lease_secret.h),
// then ":<token>:<request>:<holder>", then an optional "#<mark>" (a waiter's, lua_scripts.h).
// `token` is the grant's fencing token in decimal ("" without a token source) — for a lock set, the
// token of that key's name; `request` is "" or, for an acquire that named a request
// (AcquireRequest::request_id), 'p' then its request_digest() — "pending" — which a repeat of the
// request turns into 'g' ("given again": kAdoptLeaseScript) so that the failed attempt's cleanup
// no longer deletes it (kReleaseSilentlyScript); `holder` is what the client said it is
// (AcquireRequest::holder) with '%' and '#' written as "%25" and "%23", so the first '#' of a
// value always starts its mark. A value written by an older fencelockd is the bare lease value: it
// reads as no token and no holder. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fencelock::storage {

// The length of a request_digest(): 32 lower-case hex digits.
inline constexpr std::size_t kRequestDigestLength = 32;

// What stands for a request on the nodes: the first 128 bits of SHA-256 over owner, name and
// request id (newline-separated), in hex. Only an acquire with the same three finds it.
std::string request_digest(std::string_view owner, std::string_view name,
                           std::string_view request_id);

// ":<request>:<holder, escaped>": what follows the token in every key an acquire writes.
// `request` is "" or "p<request_digest>".
std::string lease_value_tail(std::string_view request, std::string_view holder);

// The value an acquire writes: "<lease>:<token><tail>".
std::string written_lease_value(std::string_view lease, std::string_view token,
                                std::string_view tail);

// What a value read back from a node says about its lease (never the secret).
struct LeaseValueFacts {
  std::optional<std::uint64_t>
      token;           // nullopt: written without a token, or by an older fencelockd
  std::string holder;  // unescaped; "" when none was given
};

// `value` as a node holds it (marked or not). A malformed tail reads as no token and no holder.
LeaseValueFacts read_lease_value(std::string_view value);

// A repeat's view of the lease it found (kAcquireLockRequestScript's answer "<lease>:<token>"):
// the lease value and the token, or nullopt when `head` is not of that shape.
struct RepeatedLease {
  std::string lease;
  std::optional<std::uint64_t> token;  // nullopt: granted without a token source
};
std::optional<RepeatedLease> read_repeated_lease(std::string_view head);

}  // namespace fencelock::storage
