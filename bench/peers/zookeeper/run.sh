#!/usr/bin/env bash
# The ZooKeeper rows of bench/run.sh on their own (a targeted run): starts one ZooKeeper server and
# a 3-server ensemble in a temporary directory, warms their JVMs up, runs the same rows with the
# same durations as bench/run.sh (full: 5 s per row; --quick: 1 s), prints one JSON line per row
# (also appended to RESULTS.jsonl if given) and stops both servers, whatever happens.
#
#   bench/peers/zookeeper/run.sh [--quick] [RESULTS.jsonl]
#   FENCELOCK_BENCH_PORT_BASE=N   ports N+60 (one server) and N+61 .. N+69 (ensemble), default 27300
#
# Rows: uncontended at 1, 16 and 64 callers (quick: 1, 16), contended with a 1 ms hold at 16 and 64
# callers and with no hold at 16 (quick: 1 ms at 16). Needs Debian's zookeeper and python3-kazoo.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
quick=0
[ "${1:-}" = "--quick" ] && quick=1 && shift
results=${1:-/dev/null}
base=${FENCELOCK_BENCH_PORT_BASE:-27300}
if [ "$quick" = 1 ]; then
  seconds=1 levels="1 16" contended_runs="1:16"
else
  seconds=5 levels="1 16 64" contended_runs="1:16,64 0:16"
fi
# start-zookeeper.sh installs the server when it is missing; the client is installed here.
if ! /usr/bin/python3 -c 'import kazoo' 2>/dev/null; then
  echo "zookeeper: installing python3-kazoo" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-kazoo >/dev/null 2>&1 || {
    DEBIAN_FRONTEND=noninteractive $sudo apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-kazoo >/dev/null
  }
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/fencelock-zookeeper-XXXXXX")
cleanup() {
  "$here/stop-zookeeper.sh" "$work/zookeeper" >/dev/null 2>&1 || true
  "$here/stop-zookeeper.sh" "$work/zookeeper-3" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
"$here/start-zookeeper.sh" "$work/zookeeper" $((base + 60)) 1 >"$work/zookeeper.hosts" &
one=$!
"$here/start-zookeeper.sh" "$work/zookeeper-3" $((base + 61)) 3 >"$work/zookeeper-3.hosts" &
wait "$one"
wait $!

run() {  # run SYSTEM WORKLOAD CALLERS [HOLD_MS]
  echo "zookeeper: $1 $2, $3 callers${4:+, hold $4 ms}" >&2
  /usr/bin/python3 "$here/bench.py" --hosts "$(cat "$work/$1.hosts")" --system "$1" \
    --server-pids "$(cat "$work/$1"/server-*/zookeeper.pid | paste -sd,)" --workload "$2" --callers "$3" \
    --seconds "$seconds" ${4:+--hold-ms "$4"} | if [ -n "${4:-}" ]; then sed "s/^{/{\"hold_ms\":$4,/"; else cat; fi |
    tee -a "$results"
}
# A JVM compiles its hot paths during its first thousands of requests (Redis, etcd and fencelockd
# are native code): one unrecorded run on each, both at once, before the first row.
warm=()
for system in zookeeper zookeeper-3; do
  /usr/bin/python3 "$here/bench.py" --hosts "$(cat "$work/$system.hosts")" --workload uncontended \
    --callers 16 --seconds "$seconds" >/dev/null 2>&1 &
  warm+=($!)
done
wait "${warm[@]}"

for c in $levels; do
  for system in zookeeper zookeeper-3; do run "$system" uncontended "$c"; done
done
for r in $contended_runs; do
  for c in $(echo "${r#*:}" | tr ',' ' '); do
    for system in zookeeper zookeeper-3; do run "$system" contended "$c" "${r%%:*}"; done
  done
done
