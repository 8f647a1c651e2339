// A durable non-decreasing integer in a small local file: the Redis token source's memory of the
// highest token epoch it has used, kept across restarts of fencelockd.
//
// write() replaces the file atomically and durably (temp file, fsync, rename, fsync of the
// directory) and never lowers the stored value. Not thread-safe; used from one strand.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include "fencelock/storage/result.h"

namespace fencelock::storage {

class EpochFile {
 public:
  explicit EpochFile(std::filesystem::path path) : path_(std::move(path)) {}

  // The stored value, nullopt if the file does not exist. Errors: kUnavailable (unreadable,
  // malformed).
  Result<std::optional<std::uint64_t>> read() const;
  // Stores max(stored, value) durably. Errors: kUnavailable.
  Status write(std::uint64_t value);

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace fencelock::storage
