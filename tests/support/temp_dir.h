// A private temporary directory, removed with everything in it when the TempDir is destroyed.
#pragma once

#include <filesystem>

namespace fencelock::testing {

class TempDir {
 public:
  // Creates $TMPDIR/fencelock-test-XXXXXX (or /tmp/...). Throws std::runtime_error on failure.
  TempDir();
  ~TempDir();  // never throws; a directory it cannot remove is left behind
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace fencelock::testing
