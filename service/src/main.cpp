// fencelockd: the fencelock HTTP/JSON lock service.
//
// Today it answers --help and --version; the HTTP API (docs/api.md) arrives with the service
// issue. Unknown flags are refused with a one-line message and exit code 2, as every later flag
// will be.
#include <cstdio>
#include <string_view>

#include "version.h"

namespace {

constexpr std::string_view kUsage =
    "usage: fencelockd [--help] [--version]\n"
    "\n"
    "fencelock: Redlock quorum locks over independent Redis masters, each grant paired with a\n"
    "fencing token from a linearizable counter. See docs/operations.md.\n"
    "\n"
    "  --help      print this text and exit\n"
    "  --version   print the version and exit\n";

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fwrite(kUsage.data(), 1, kUsage.size(), stdout);
      return 0;
    }
    if (arg == "--version") {
      std::printf("fencelockd %s\n", fencelock::service::kVersion);
      return 0;
    }
    std::fprintf(stderr, "fencelockd: unknown flag '%s' (see --help)\n", argv[i]);
    return 2;
  }
  std::fwrite(kUsage.data(), 1, kUsage.size(), stderr);
  return 2;
}
