#include "lease_codec.h"

#include <charconv>

#include "fencelock/storage/lease_secret.h"

namespace fencelock::service {

std::string encode_lease(std::uint64_t token, std::string_view proof) {
  std::string lease = std::to_string(token);
  lease += '.';
  lease.append(proof);
  return lease;
}

std::optional<storage::LeaseClaim> decode_lease(std::string_view lease) {
  const std::size_t dot = lease.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 20) return std::nullopt;
  const std::string_view digits = lease.substr(0, dot);
  if (digits.size() > 1 && digits.front() == '0') return std::nullopt;
  storage::LeaseClaim claim;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), claim.token);
  if (ec != std::errc() || end != digits.data() + digits.size() || claim.token == 0)
    return std::nullopt;
  const std::string_view proof = lease.substr(dot + 1);
  if (!storage::is_well_formed_lease_proof(proof)) return std::nullopt;
  claim.proof.assign(proof);
  return claim;
}

}  // namespace fencelock::service
