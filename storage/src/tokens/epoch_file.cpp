#include "tokens/epoch_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <string>

namespace fencelock::storage {

namespace {

Error io_error(const std::string& what, const std::filesystem::path& path) {
  return make_error(ErrorCode::kUnavailable,
                    what + " " + path.string() + ": " + std::strerror(errno));
}

bool fsync_path(const std::filesystem::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

Result<std::optional<std::uint64_t>> EpochFile::read() const {
  std::ifstream in(path_);
  if (!in) {
    if (!std::filesystem::exists(path_)) return std::optional<std::uint64_t>();
    return io_error("cannot read", path_);
  }
  std::string text;
  std::getline(in, text);
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return make_error(ErrorCode::kUnavailable, path_.string() + " does not hold a token epoch");
  }
  return std::optional<std::uint64_t>(value);
}

Status EpochFile::write(std::uint64_t value) {
  auto stored = read();
  if (!stored.ok()) return std::move(stored).error();
  if (stored.value() && *stored.value() >= value) return Done{};
  const std::filesystem::path temp = path_.string() + ".tmp";
  const std::string text = std::to_string(value) + "\n";
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot create", temp);
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                       ::fsync(fd) == 0;
  ::close(fd);
  if (!written) return io_error("cannot write", temp);
  if (::rename(temp.c_str(), path_.c_str()) != 0) return io_error("cannot rename onto", path_);
  const auto dir = path_.has_parent_path() ? path_.parent_path() : std::filesystem::path(".");
  if (!fsync_path(dir, O_RDONLY | O_DIRECTORY)) return io_error("cannot sync directory of", path_);
  return Done{};
}

}  // namespace fencelock::storage
