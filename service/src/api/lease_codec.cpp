#include "api/lease_codec.h"

#include <charconv>

#include "fencelock/storage/lease_secret.h"

namespace fencelock::service {

std::string encode_lease(std::uint64_t token, std::string_view proof) {
  std::string lease = std::to_string(token);
  lease += '.';
  lease.append(proof);
  return lease;
}

namespace {

// A decimal number without leading zeros (but "0" itself) that fits T, or nullopt.
template <class T>
std::optional<T> decimal(std::string_view digits) {
  if (digits.empty() || digits.size() > 20 || (digits.size() > 1 && digits.front() == '0'))
    return std::nullopt;
  T value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

std::optional<std::uint64_t> token_of(std::string_view digits) {
  const auto token = decimal<std::uint64_t>(digits);
  if (!token || *token == 0) return std::nullopt;
  return token;
}

}  // namespace

std::optional<storage::LeaseClaim> decode_lease(std::string_view lease) {
  const std::size_t dot = lease.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const auto token = token_of(lease.substr(0, dot));
  if (!token) return std::nullopt;
  storage::LeaseClaim claim;
  claim.token = *token;
  const std::string_view proof = lease.substr(dot + 1);
  if (!storage::is_well_formed_lease_proof(proof)) return std::nullopt;
  claim.proof.assign(proof);
  return claim;
}

std::string encode_set_lease(const std::vector<std::uint64_t>& tokens, std::string_view proof) {
  std::string lease;
  for (const std::uint64_t token : tokens) {
    if (!lease.empty()) lease += ',';
    lease += std::to_string(token);
  }
  lease += '.';
  lease.append(proof);
  return lease;
}

std::optional<storage::LockSetClaim> decode_set_lease(std::string_view lease, std::size_t names) {
  const std::size_t dot = lease.find('.');
  if (dot == std::string_view::npos || names == 0) return std::nullopt;
  storage::LockSetClaim claim;
  std::string_view tokens = lease.substr(0, dot);
  while (true) {
    const std::size_t comma = tokens.find(',');
    const auto token = token_of(tokens.substr(0, comma));
    if (!token) return std::nullopt;
    claim.tokens.push_back(*token);
    if (claim.tokens.size() > names) return std::nullopt;
    if (comma == std::string_view::npos) break;
    tokens.remove_prefix(comma + 1);
  }
  if (claim.tokens.size() != names) return std::nullopt;
  const std::string_view proof = lease.substr(dot + 1);
  if (!storage::is_well_formed_lease_proof(proof)) return std::nullopt;
  claim.proof.assign(proof);
  return claim;
}

std::string encode_permit_lease(std::uint64_t token, std::string_view proof, std::uint32_t permits,
                                std::uint32_t slot) {
  std::string lease = encode_lease(token, proof);
  lease += '.';
  lease += std::to_string(permits);
  lease += '.';
  lease += std::to_string(slot);
  return lease;
}

std::optional<PermitClaim> decode_permit_lease(std::string_view lease) {
  const std::size_t slot_dot = lease.rfind('.');
  if (slot_dot == std::string_view::npos) return std::nullopt;
  const std::size_t permits_dot = lease.rfind('.', slot_dot == 0 ? 0 : slot_dot - 1);
  if (permits_dot == std::string_view::npos || permits_dot >= slot_dot) return std::nullopt;
  const auto permits =
      decimal<std::uint32_t>(lease.substr(permits_dot + 1, slot_dot - permits_dot - 1));
  const auto slot = decimal<std::uint32_t>(lease.substr(slot_dot + 1));
  if (!permits || !slot || *permits == 0 || *permits > storage::kMaxPermits || *slot >= *permits)
    return std::nullopt;
  auto claim = decode_lease(lease.substr(0, permits_dot));
  if (!claim) return std::nullopt;
  return PermitClaim{std::move(*claim), *permits, *slot};
}

std::string encode_rw_lease(std::uint64_t token, std::string_view proof, storage::RwMode mode) {
  return encode_lease(token, proof) + (mode == storage::RwMode::kWrite ? ".w" : ".r");
}

std::optional<RwClaim> decode_rw_lease(std::string_view lease) {
  if (lease.size() < 2 || lease[lease.size() - 2] != '.') return std::nullopt;
  const char mode = lease.back();
  if (mode != 'r' && mode != 'w') return std::nullopt;
  auto claim = decode_lease(lease.substr(0, lease.size() - 2));
  if (!claim) return std::nullopt;
  return RwClaim{std::move(*claim), mode == 'w' ? storage::RwMode::kWrite : storage::RwMode::kRead};
}

}  // namespace fencelock::service
