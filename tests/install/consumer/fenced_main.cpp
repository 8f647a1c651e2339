// An out-of-tree program against the installed fencelock::fenced_table: its PostgreSQL path must
// link (libpq found by the installed package) and answer a closed port with kUnavailable.
//   install-consumer-fenced URL    exits 0 when connecting to URL is refused as kUnavailable
#include <cstdio>

#include "fencelock/fenced_table.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto table = fencelock::FencedTable::connect(argv[1], "accounts");
  if (table.ok() || table.error().code != fencelock::ErrorCode::kUnavailable) {
    std::fprintf(stderr, "expected kUnavailable from %s\n", argv[1]);
    return 1;
  }
  return 0;
}
