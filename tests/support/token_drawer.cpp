// fencelock_token_drawer PATH NAME [COUNT]: a separate process that owns a SQLite token file and
// draws tokens from it, printing each one (flushed) only after it was handed out. Tests kill it
// with SIGKILL mid-stream, or start it against a file they own to see it refused.
// Exit codes: 0 after COUNT draws (default: forever), 2 when the file cannot be owned, 3 on a
// draw error.
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>

#include "fencelock/storage/sqlite_token_source.h"

int main(int argc, char** argv) {
  using namespace fencelock::storage;
  if (argc < 3) {
    std::fprintf(stderr, "usage: fencelock_token_drawer PATH NAME [COUNT]\n");
    return 2;
  }
  SqliteTokenOptions options;
  options.path = argv[1];
  options.reserve_block = 10;  // many durable reservations per run
  auto source = SqliteTokenSource::open(options);
  if (!source.ok()) {
    std::fprintf(stderr, "fencelock_token_drawer: %s\n", source.error().message.c_str());
    return 2;
  }
  const long count = argc > 3 ? std::atol(argv[3]) : -1;
  for (long i = 0; count < 0 || i < count; ++i) {
    std::promise<Result<std::uint64_t>> drawn;
    source.value()->next(argv[2],
                         [&](Result<std::uint64_t> token) { drawn.set_value(std::move(token)); });
    auto token = drawn.get_future().get();
    if (!token.ok()) {
      std::fprintf(stderr, "fencelock_token_drawer: %s\n", token.error().message.c_str());
      return 3;
    }
    std::printf("%llu\n", static_cast<unsigned long long>(token.value()));
    std::fflush(stdout);
  }
  return 0;
}
