#include "fencelock/random_hex.h"

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace fencelock {

BasicResult<std::string, RandomFailure> random_hex(std::size_t bytes) {
  std::array<unsigned char, kMaxRandomBytes> buffer{};
  if (bytes > buffer.size()) return RandomFailure{"random_hex: too many bytes"};
  std::size_t filled = 0;
  while (filled < bytes) {
    const ssize_t got = ::getrandom(buffer.data() + filled, bytes - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return RandomFailure{std::string("getrandom failed: ") + std::strerror(errno)};
    }
    filled += static_cast<std::size_t>(got);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  text.reserve(2 * bytes);
  for (std::size_t i = 0; i < bytes; ++i) {
    text.push_back(kHex[buffer[i] >> 4]);
    text.push_back(kHex[buffer[i] & 0x0f]);
  }
  return text;
}

}  // namespace fencelock
