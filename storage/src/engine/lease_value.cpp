#include "engine/lease_value.h"

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

}  // namespace

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

std::string lease_value_tail(std::string_view holder) {
  std::string tail = "::";
  tail.reserve(2 + holder.size());
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
  std::uint64_t parsed = 0;
  if (!token.empty()) {
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), parsed);
    if (ec != std::errc() || end != token.data() + token.size()) return facts;
    facts.token = parsed;
  }
  facts.holder = unescaped(rest.substr(request_end + 1));
  return facts;
}

}  // namespace fencelock::storage
