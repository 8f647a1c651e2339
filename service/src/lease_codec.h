// The lease string clients hold: "<token>.<secret>", e.g. "42.9f86d081884c7d659a2feaa0c55ad015".
//
// The secret (32 hex digits) is what release and extend prove ownership with; the token rides
// along so that extend can answer with the lease's token without storing it anywhere. Clients
// treat the string as opaque. Changing the token part gains nothing: only the secret is checked,
// and a holder can already send any token it likes to its resource — fencing protects against
// faulty clients, not malicious ones. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fencelock::service {

struct DecodedLease {
  std::uint64_t token = 0;
  std::string_view secret;  // a view into the decoded text
};

std::string encode_lease(std::uint64_t token, std::string_view secret);

// nullopt unless `lease` is a positive decimal token (no leading zeros, fits 64 bits), a '.' and
// a well-formed secret.
std::optional<DecodedLease> decode_lease(std::string_view lease) noexcept;

}  // namespace fencelock::service
