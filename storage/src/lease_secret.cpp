#include "fencelock/storage/lease_secret.h"

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace fencelock::storage {

Result<std::string> generate_lease_secret() {
  std::array<unsigned char, kLeaseSecretBytes> bytes{};
  std::size_t filled = 0;
  while (filled < bytes.size()) {
    const ssize_t got = ::getrandom(bytes.data() + filled, bytes.size() - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return make_error(ErrorCode::kInternal,
                        std::string("getrandom failed: ") + std::strerror(errno));
    }
    filled += static_cast<std::size_t>(got);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string secret(kLeaseSecretLength, '0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    secret[2 * i] = kHex[bytes[i] >> 4];
    secret[2 * i + 1] = kHex[bytes[i] & 0x0f];
  }
  return secret;
}

bool is_well_formed_lease_secret(std::string_view text) noexcept {
  if (text.size() != kLeaseSecretLength) return false;
  for (const char c : text) {
    const bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    if (!hex) return false;
  }
  return true;
}

}  // namespace fencelock::storage
