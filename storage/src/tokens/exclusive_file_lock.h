// Proof that this process alone owns a file: an flock(2) on a sidecar "<path>.lock", held for the
// lock object's lifetime and dropped by the kernel when the process dies (even by kill -9), so a
// crash never leaves a stale lock behind. The sidecar carries the owner's pid for the error
// message.
//
// A sidecar, not the file itself: SQLite uses POSIX record locks on the database, and closing any
// other descriptor of that file would silently drop them.
#pragma once

#include <filesystem>

#include "fencelock/storage/result.h"

namespace fencelock::storage {

class ExclusiveFileLock {
 public:
  // Errors: kUnavailable "… is in use by another process (pid N)" when someone holds it;
  // kUnavailable when the sidecar cannot be created.
  static Result<ExclusiveFileLock> acquire(const std::filesystem::path& path);

  ExclusiveFileLock(ExclusiveFileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  ExclusiveFileLock& operator=(ExclusiveFileLock&&) = delete;
  ExclusiveFileLock(const ExclusiveFileLock&) = delete;
  ExclusiveFileLock& operator=(const ExclusiveFileLock&) = delete;
  ~ExclusiveFileLock();

 private:
  explicit ExclusiveFileLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace fencelock::storage
