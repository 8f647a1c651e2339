#include "engine/lease_value.h"

#include <openssl/evp.h>

#include <array>
#include <charconv>

#include "fencelock/storage/lease.h"
#include "fencelock/storage/lease_secret.h"

namespace fencelock::storage {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::string unescaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex_digit(text[i + 1]) >= 0 &&
        hex_digit(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex_digit(text[i + 1]) * 16 + hex_digit(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

std::optional<std::uint64_t> decimal(std::string_view text) {
  std::uint64_t parsed = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return parsed;
}

// Fetched once, as lease_secret.cpp's SHA-1: an implicit fetch per digest (EVP_sha256() in
// EVP_Digest) takes OpenSSL 3's provider locks and name lookups on every call.
const EVP_MD* sha256_md() {
  static const EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

}  // namespace

std::string request_digest(std::string_view owner, std::string_view name,
                           std::string_view request_id) {
  std::string text;
  text.append(owner).push_back('\n');
  text.append(name).push_back('\n');
  text.append(request_id);
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_Digest(text.data(), text.size(), digest.data(), &length, sha256_md(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(kRequestDigestLength);
  for (std::size_t i = 0; i < kRequestDigestLength / 2; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0x0f]);
  }
  return hex;
}

std::optional<RepeatedLease> read_repeated_lease(std::string_view head) {
  if (head.size() <= kLeaseValueLength || head[kLeaseValueLength] != ':') return std::nullopt;
  RepeatedLease lease{std::string(head.substr(0, kLeaseValueLength)), std::nullopt};
  const std::string_view token = head.substr(kLeaseValueLength + 1);
  if (token.empty()) return lease;
  lease.token = decimal(token);
  if (!lease.token) return std::nullopt;
  return lease;
}

bool is_valid_holder(std::string_view holder) noexcept {
  if (holder.size() > kMaxHolderLength) return false;
  for (std::size_t i = 0; i < holder.size(); ++i) {
    const auto c = static_cast<unsigned char>(holder[i]);
    const auto next = i + 1 < holder.size() ? static_cast<unsigned char>(holder[i + 1]) : 0;
    const auto third = i + 2 < holder.size() ? static_cast<unsigned char>(holder[i + 2]) : 0;
    if (c < 0x20 || c == 0x7f) return false;                      // C0, DEL
    if (c == 0xc2 && next >= 0x80 && next <= 0x9f) return false;  // C1 (U+0080..U+009F)
    if (c == 0xe2 && next == 0x80 && (third == 0xa8 || third == 0xa9))
      return false;  // U+2028, U+2029: line and paragraph separators
  }
  return true;
}

bool is_valid_request_id(std::string_view id) noexcept {
  if (id.empty() || id.size() > kMaxRequestIdLength) return false;
  for (const char c : id) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

std::string lease_value_tail(std::string_view request, std::string_view holder) {
  std::string tail = ":";
  tail.reserve(2 + request.size() + holder.size());
  tail.append(request).push_back(':');
  for (const char c : holder) {
    if (c == '%') {
      tail.append("%25");
    } else if (c == '#') {
      tail.append("%23");
    } else {
      tail.push_back(c);
    }
  }
  return tail;
}

std::string written_lease_value(std::string_view lease, std::string_view token,
                                std::string_view tail) {
  std::string value;
  value.reserve(lease.size() + 1 + token.size() + tail.size());
  value.append(lease).push_back(':');
  value.append(token).append(tail);
  return value;
}

LeaseValueFacts read_lease_value(std::string_view value) {
  LeaseValueFacts facts;
  value = value.substr(0, value.find('#'));
  if (value.size() <= kLeaseValueLength || value[kLeaseValueLength] != ':') return facts;
  std::string_view rest = value.substr(kLeaseValueLength + 1);
  const std::size_t token_end = rest.find(':');
  if (token_end == std::string_view::npos) return facts;
  const std::string_view token = rest.substr(0, token_end);
  rest.remove_prefix(token_end + 1);
  const std::size_t request_end = rest.find(':');
  if (request_end == std::string_view::npos) return facts;
  if (!token.empty()) {
    facts.token = decimal(token);
    if (!facts.token) return facts;
  }
  facts.holder = unescaped(rest.substr(request_end + 1));
  return facts;
}

}  // namespace fencelock::storage
