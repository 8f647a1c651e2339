#include "tokens/exclusive_file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace fencelock::storage {

Result<ExclusiveFileLock> ExclusiveFileLock::acquire(const std::filesystem::path& path) {
  const std::string lock_path = path.string() + ".lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return make_error(ErrorCode::kUnavailable,
                      "cannot create " + lock_path + ": " + std::strerror(errno));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    char owner[32] = {};
    const ssize_t n = ::pread(fd, owner, sizeof(owner) - 1, 0);
    ::close(fd);
    std::string pid =
        n > 0 ? std::string(owner, static_cast<std::size_t>(n)) : std::string("unknown");
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    return make_error(ErrorCode::kUnavailable, path.string() +
                                                   " is in use by another process (pid " + pid +
                                                   "); only one fencelockd may own a token file");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The lock is held; the pid is only for messages.
  }
  return ExclusiveFileLock(fd);
}

ExclusiveFileLock::~ExclusiveFileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace fencelock::storage
