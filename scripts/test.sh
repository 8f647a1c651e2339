#!/usr/bin/env bash
# The test command: installs what is missing, builds everything with ASan+UBSan and runs every
# test (unit and integration against real redis-server processes) through ctest.
# Exits non-zero on any failure, and also if a test left a redis-server behind.
#   ./scripts/test.sh              all tests
#   ./scripts/test.sh -R quorum    extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

# Leftovers of a crashed earlier run (the harness cleans up; a SIGKILLed runner cannot).
pkill -KILL -f 'redis-server .*fencelock-test-' 2>/dev/null || true
rm -rf "${TMPDIR:-/tmp}"/fencelock-test-* 2>/dev/null || true

cmake --preset asan >/dev/null
cmake --build --preset asan -j "$(nproc)"

status=0
ctest --preset asan --timeout 600 "$@" || status=$?

if pgrep -f 'redis-server .*fencelock-test-' >/dev/null; then
  echo "test.sh: a test left redis-server processes running:" >&2
  pgrep -af 'redis-server .*fencelock-test-' >&2 || true
  pkill -KILL -f 'redis-server .*fencelock-test-' || true
  status=1
fi
exit "$status"
