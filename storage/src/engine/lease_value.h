// What a lock key holds on a node (lua_scripts.h): the lease value (48 hex digits, lease_secret.h),
// then ":<token>:<request>:<holder>", then an optional "#<mark>" (a waiter's, lua_scripts.h).
// `token` is the grant's fencing token in decimal ("" without a token source) — for a lock set, the
// token of that key's name; `request` is "" (reserved); `holder` is what the client said it is
// (AcquireRequest::holder) with '%' and '#' written as "%25" and "%23", so the first '#' of a
// value always starts its mark. A value written by an older fencelockd is the bare lease value: it
// reads as no token and no holder. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fencelock::storage {

// ":<request>:<holder, escaped>": what follows the token in every key an acquire writes.
std::string lease_value_tail(std::string_view holder);

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

}  // namespace fencelock::storage
