#include "fencelock/storage/lease_secret.h"

#include <openssl/evp.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "fencelock/random_hex.h"

namespace fencelock::storage {

namespace {

constexpr char kHex[] = "0123456789abcdef";

void append_hex(std::string& out, const unsigned char* bytes, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    out.push_back(kHex[bytes[i] >> 4]);
    out.push_back(kHex[bytes[i] & 0x0f]);
  }
}

bool is_lower_hex(std::string_view text) noexcept {
  bool hex = true;
  for (const char c : text)
    hex &= (c >= '0' && c <= '9') | (c >= 'a' && c <= 'f');  // no early exit: branch-free
  return hex;
}

// Fetched once: an implicit fetch per digest (EVP_sha1() in EVP_Digest) takes OpenSSL 3's provider
// locks and name lookups on every call, which showed up in the engine's profile.
const EVP_MD* sha1_md() {
  static const EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA1", nullptr);
  return md;
}

}  // namespace

namespace {

Result<std::string> random_id(std::size_t bytes) {
  auto hex = fencelock::random_hex(bytes);
  if (!hex.ok()) return make_error(ErrorCode::kInternal, std::move(hex).error().message);
  return std::move(hex).value();
}

}  // namespace

Result<std::string> generate_lease_secret() {
  return random_id(kLeaseSecretLength / 2);
}

Result<std::string> generate_lease_value() {
  return random_id(kLeaseValueLength / 2);
}

bool is_valid_lease_owner(std::string_view owner) noexcept {
  if (owner.size() > kMaxLeaseOwnerLength) return false;
  for (const char c : owner) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string claim_token_text(std::uint64_t token, std::string_view owner) {
  std::string text = std::to_string(token);
  if (!owner.empty()) text.append("@").append(owner);
  return text;
}

std::string set_claim_text(std::span<const std::uint64_t> tokens,
                           std::span<const std::string> names, std::string_view owner) {
  std::string text;
  for (const std::uint64_t token : tokens) {
    if (!text.empty()) text.push_back(',');
    text.append(std::to_string(token));
  }
  std::string joined;
  for (const auto& name : names) joined.append(name).push_back('\n');
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_Digest(joined.data(), joined.size(), digest.data(), &length, sha1_md(), nullptr);
  text.push_back('#');
  append_hex(text, digest.data(), 8);
  if (!owner.empty()) text.append("@").append(owner);
  return text;
}

std::string permit_claim_text(std::uint64_t token, std::uint32_t permits, std::uint32_t slot,
                              std::string_view owner) {
  std::string text = std::to_string(token);
  text.append("/").append(std::to_string(permits)).append("/").append(std::to_string(slot));
  if (!owner.empty()) text.append("@").append(owner);
  return text;
}

std::string rw_claim_text(std::uint64_t token, RwMode mode, std::string_view owner) {
  std::string text = std::to_string(token);
  text.append(mode == RwMode::kWrite ? "/w" : "/r");
  if (!owner.empty()) text.append("@").append(owner);
  return text;
}

std::string lease_proof_of_text(std::string_view value, std::string text) {
  // The same text the scripts hash: "<token text>:<value>" (sha1hex is lower-case hex).
  text.push_back(':');
  text.append(value.substr(0, kLeaseValueLength));
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_Digest(text.data(), text.size(), digest.data(), &length, sha1_md(), nullptr);
  std::string proof(value.substr(0, kLeaseIdLength));
  proof.reserve(kLeaseProofLength);
  append_hex(proof, digest.data(), (kLeaseProofLength - kLeaseIdLength) / 2);
  return proof;
}

std::string lease_proof(std::string_view value, std::uint64_t token, std::string_view owner) {
  return lease_proof_of_text(value, claim_token_text(token, owner));
}

bool is_well_formed_lease_proof(std::string_view text) noexcept {
  return text.size() == kLeaseProofLength && is_lower_hex(text);
}

}  // namespace fencelock::storage
