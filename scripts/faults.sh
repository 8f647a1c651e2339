#!/usr/bin/env bash
# The fault campaign (tests/faults/campaign): real lock nodes, a token store (a counter master,
# SQLite files or etcd), fencelockd instances and the resource store, under kills, pauses,
# partitions, link faults, clock jumps, counter data loss and operators' mistakes; every history
# is checked (tokens, lease windows, requests asked again, the store, lock-set, liveness) and
# every negative control must fire. See docs/safety.md.
#
#   ./scripts/faults.sh [--quick]       every scenario once, short fault phases (~6 min; in CI)
#   ./scripts/faults.sh --long          a seeded mix for 30 minutes
#   ./scripts/faults.sh ... --seed N    reproduce a run;  --only NAME[,NAME] for some scenarios
# Histories and results: build/faults/ (results.jsonl, <run>-<scenario>.jsonl).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target fencelock_faults >/dev/null
mode=--quick
args=()
for arg in "$@"; do
  case "$arg" in
    --quick|--long) mode=$arg ;;
    *) args+=("$arg") ;;
  esac
done
# Leftovers of a crashed earlier run (the harness stops what it starts; a SIGKILLed one cannot).
pkill -KILL -f 'redis-server .*fencelock-test-' 2>/dev/null || true
status=0
build/release/tests/fencelock_faults --bin build/release --out build/faults "$mode" "${args[@]}" || status=$?
if pgrep -f 'redis-server .*fencelock-test-' >/dev/null; then
  echo "faults.sh: the campaign left redis-server processes running" >&2
  pkill -KILL -f 'redis-server .*fencelock-test-' || true
  status=1
fi
exit "$status"
