#!/usr/bin/env bash
# The cost as the work grows (#20): what fencelockd, the lock nodes and the loader spend as the
# names, the waiters, the idle connections and the lock nodes grow. bench/run.sh calls it; it also
# runs on its own.
#
#   bench/scale.sh [--quick] [RESULTS.jsonl]   (default build/bench/scale.jsonl, appended to)
#   FENCELOCK_BENCH_PORT_BASE=N   its ports are N+40 .. N+46 (lock nodes) and N+50 (default 27300)
#   FENCELOCK_SCALE_PARTS="names waiters idle nodes"   the parts to run (default: all four)
#
# Starts 7 redis-servers of its own (no persistence, as in bench/run.sh) and, for every run, a
# fresh release-build fencelockd (SQLite tokens, key prefix bench-scale:) on the first 3, 5 or 7
# of them, so that each run's RSS starts from the same point. Every run goes through
# bench/proc_probe.py, which adds the CPU of fencelockd (and its busiest thread), of the lock
# nodes and of the loader, their RSS and descriptors, and how busy the whole machine was: the
# rows say which resource ran out first (bench/report.py). Rows have "system":
# "fencelock-scale" and "scale": names | waiters | idle_rss | idle_ab | nodes.
#
#   names     uncontended pairs at 64 callers on random names out of 10,000 vs 1,000,000
#             (ABBA), and INFO memory's used_memory of each lock node before and after
#   waiters   1, 16, 1,000 and 10,000 callers on one name with wait_ms 30 s and no hold (1,000
#             or more arriving at 1,000 a second): the hand-off rate once all are queued,
#             fencelockd's RSS, who was never served, who gave up; 16 again after 10,000 (A B A)
#   idle      10,000 idle keep-alive connections (a second loader): fencelockd's RSS with them;
#             and uncontended acquires at 16 callers without, beside them twice, without (ABBA)
#   nodes     uncontended pairs at 64 callers with 3, 5, 7 lock nodes (3 5 7 7 5 3)
#
# --quick: the same steps, scaled down (1,000 vs 20,000 names, up to 200 waiters, 500 idle
# connections, 1 s runs, one pass): a smoke test, no timing. Full: about 4 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[ "${1:-}" = "--quick" ] && quick=1 && shift
results=${1:-build/bench/scale.jsonl}
bin=$PWD/build/release
[ -x "$bin/bench/http_bench" ] && [ -x "$bin/service/fencelockd" ] ||
  { cmake --preset release >/dev/null && cmake --build --preset release -j2 >/dev/null; }
mkdir -p "$(dirname "$results")"
touch "$results"
first_row=$(($(wc -l <"$results") + 1))  # this run's rows start here (the file is appended to)
work=$(mktemp -d "${TMPDIR:-/tmp}/fencelock-scale-XXXXXX")
base=${FENCELOCK_BENCH_PORT_BASE:-27300}
node_ports=$(seq $((base + 40)) $((base + 46)))
port=$((base + 50))
# Each connection is a descriptor, in fencelockd and in the loader: as many as the hard limit lets.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

say() { echo "bench: $*" >&2; }
record() { tee -a "$results" | sed 's/^/  /'; }
tag() { sed "s/^{/{\"scale\": \"$1\", /"; }  # tag KIND: marks a JSON line as this script's

fencelockd_pid=""
idle_pid=""
stop_fencelockd() {
  [ -n "$fencelockd_pid" ] || return 0
  kill -TERM "$fencelockd_pid" 2>/dev/null || true
  wait "$fencelockd_pid" 2>/dev/null || true
  fencelockd_pid=""
}
cleanup() {
  [ -n "$idle_pid" ] && kill -TERM "$idle_pid" 2>/dev/null
  stop_fencelockd
  for f in "$work"/*.pid; do [ -e "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null || true; done
  sleep 0.3
  for f in "$work"/*.pid; do [ -e "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

for p in $node_ports; do
  redis-server --port "$p" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
    --pidfile "$work/redis-$p.pid" --dir "$work" --logfile "$work/redis-$p.log" >/dev/null
done
for p in $node_ports; do
  for _ in $(seq 50); do [ -s "$work/redis-$p.pid" ] && break; sleep 0.1; done
done
# first_nodes K FORMAT: the first K lock nodes, as addresses, ports or PIDs (comma-separated).
first_nodes() {
  local p out=""
  for p in $(echo "$node_ports" | head -n "$1"); do
    case $2 in
      address) out="$out${out:+,}127.0.0.1:$p" ;;
      port) out="$out${out:+,}$p" ;;
      pid) out="$out${out:+,}$(cat "$work/redis-$p.pid")" ;;
    esac
  done
  echo "$out"
}

# A fresh fencelockd on the first K lock nodes (one at a time: they share the SQLite file, so every
# instance serves the same token store under the same key prefix).
start_fencelockd() {  # start_fencelockd K [MORE FENCELOCKD FLAGS...]
  local k=$1
  shift
  stop_fencelockd
  "$bin/service/fencelockd" --listen "127.0.0.1:$port" --redis "$(first_nodes "$k" address)" \
    --tokens "sqlite:$work/tokens.db" --key-prefix "bench-scale:" --max-connections 15000 \
    --max-connections-per-client 100000 "$@" >>"$work/fencelockd.log" 2>&1 &
  fencelockd_pid=$!
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && return 0; sleep 0.1; done
  say "fencelockd on $k nodes did not become ready"
  tail -n 5 "$work/fencelockd.log" >&2
  return 1
}

# probe K HTTP_BENCH_ARGS...: one http_bench run against the current fencelockd, measured by
# bench/proc_probe.py (fencelockd and the first K lock nodes: CPU, memory, commands). The loader
# closes with a reset: thousands of connections would otherwise leave thousands of loopback ports
# in TIME_WAIT for a minute, where other benches and tests on this machine bind their servers.
probe() {
  local k=$1
  shift
  python3 bench/proc_probe.py --watch "fencelockd=$fencelockd_pid" --watch "redis=$(first_nodes "$k" pid)" \
    --metrics "http://127.0.0.1:$port/metrics" --redis "$(first_nodes "$k" port)" -- \
    "$bin/bench/http_bench" --endpoint "http://127.0.0.1:$port" --system fencelock-scale --close-with-reset "$@"
}

metric() {  # metric NAME: its value on the current fencelockd's /metrics (0 if absent)
  { curl -fs "http://127.0.0.1:$port/metrics" || true; } | awk -v m="$1" '$1 == m {print $2; found = 1} END {if (!found) print 0}'
}

if [ "$quick" = 1 ]; then
  seconds=1
  name_counts="1000 20000"
  waiter_runs="1:1:0 16:1:0 200:2:200"
  idle_connections=500
  node_counts="3 5 7"
else
  seconds=8
  name_counts="10000 1000000 1000000 10000"
  waiter_runs="1:5:0 16:5:0 1000:8:1000 10000:20:10000 10000:20:10000:1000 16:5:0"
  idle_connections=10000
  node_counts="3 5 7 7 5 3"
fi
callers=64
[ "$quick" = 1 ] && callers=16
fd_limit=$(ulimit -n)
if [ "$fd_limit" != unlimited ] && [ "$fd_limit" -lt $((idle_connections + 200)) ]; then
  say "scale: the open-file limit ($fd_limit, hard) is below $idle_connections connections + 200:" \
    "the 10,000-connection runs will report the connections they could not open"
fi
parts=" ${FENCELOCK_SCALE_PARTS:-names waiters idle nodes} "
part() { [[ "$parts" == *" $1 "* ]]; }

part names && for n in $name_counts; do
  say "scale: uncontended, $callers callers, random names out of $n"
  start_fencelockd 5
  probe 5 --workload uncontended --callers "$callers" --names "$n" --seconds "$seconds" |
    tag names | sed "s/^{/{\"names\": $n, /" | record
done

# Waiters (N:SECONDS:RAMP_MS[:NODE_TIMEOUT_MS]): no hold (the hand-off itself), wait_ms 30 s;
# 1,000 or more arrive at 1,000 a second (the ramp), and the hand-off rate is counted once all of
# them are queued. 10,000 run twice: with the default --node-timeout (50 ms) and with 1 s, which
# tells a lock node that is slow to answer from one that is down.
part waiters && for run in $waiter_runs; do
  IFS=: read -r n run_seconds ramp_ms node_timeout <<<"$run"
  say "scale: $n waiters on one name, hold 0, $run_seconds s (arriving over $ramp_ms ms)${node_timeout:+, --node-timeout ${node_timeout}ms}"
  start_fencelockd 5 ${node_timeout:+--node-timeout "${node_timeout}ms"}
  probe 5 --workload contended --callers "$n" --hold-ms 0 --wait-ms 30000 --seconds "$run_seconds" \
    --ramp-ms "$ramp_ms" | tag waiters |
    sed "s/^{/{\"ramp_wanted_ms\": $ramp_ms, \"node_timeout_ms\": ${node_timeout:-50}, /" | record
done

active() {  # active IDLE: the active client's run, beside IDLE idle connections
  probe 5 --workload uncontended --callers 16 --seconds "$seconds" | tag idle_ab |
    sed "s/^{/{\"beside_idle\": $1, /" | record
}
idle_part() {
  say "scale: $idle_connections idle keep-alive connections beside an active client of 16 callers"
  start_fencelockd 5
  active 0
  rss_before=$(awk '/VmRSS/ {print $2}' "/proc/$fencelockd_pid/status")
  "$bin/bench/http_bench" --endpoint "http://127.0.0.1:$port" --system fencelock-scale --close-with-reset --workload idle \
    --callers "$idle_connections" --seconds $((4 * seconds + 30)) >"$work/idle.json" &
  idle_pid=$!
  open=0
  for _ in $(seq 300); do
    open=$(metric fencelock_http_open_connections)
    [ "${open%.*}" -ge "$idle_connections" ] && break
    sleep 0.1
  done
  sleep 1
  fds=$(ls "/proc/$fencelockd_pid/fd" | wc -l)
  fd_limit=$(awk '/Max open files/ {print $4}' "/proc/$fencelockd_pid/limits")
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$fencelockd_pid/status")
  loader_rss=$(awk '/VmRSS/ {print $2}' "/proc/$idle_pid/status")
  loader_fds=$(ls "/proc/$idle_pid/fd" | wc -l)
  ports=$(awk '{print $2 - $1 + 1}' /proc/sys/net/ipv4/ip_local_port_range)
  echo "{\"scale\": \"idle_rss\", \"system\": \"fencelock-scale\", \"workload\": \"idle\", \"connections\": ${open%.*}," \
    "\"wanted\": $idle_connections, \"rss_before_kib\": $rss_before, \"rss_kib\": $rss, \"fds\": $fds," \
    "\"fd_limit\": \"$fd_limit\", \"loader_rss_kib\": $loader_rss, \"loader_fds\": $loader_fds," \
    "\"ephemeral_ports\": $ports}" | record
  active "${open%.*}"
  active "${open%.*}"
  kill -TERM "$idle_pid" 2>/dev/null || true
  wait "$idle_pid" 2>/dev/null || true
  idle_pid=""
  for _ in $(seq 100); do
    [ "$(metric fencelock_http_open_connections | cut -d. -f1)" -le 1 ] && break
    sleep 0.1
  done
  active 0
}
if part idle; then idle_part; fi

part nodes && for k in $node_counts; do
  say "scale: uncontended, $callers callers, $k lock nodes"
  start_fencelockd "$k"
  probe "$k" --workload uncontended --callers "$callers" --seconds "$seconds" | tag nodes |
    sed "s/^{/{\"nodes\": $k, /" | record
done
stop_fencelockd

# Smoke check (no timing): every run did work without errors, every waiter was served and all the
# idle connections opened. --quick fails on a miss; a full run reports it and carries on.
tail -n "+$first_row" "$results" | python3 -c '
import json, sys
quick = sys.argv[1] == "1"
bad = []
for line in sys.stdin:
    r = json.loads(line)
    kind = r.get("scale")
    if kind == "idle_rss":
        ok = r["connections"] >= r["wanted"]
    elif kind == "waiters":
        ok = r.get("ops") and not (r.get("errors") or r.get("callers_never_served") or r.get("unanswered_at_exit"))
    elif kind:
        ok = r.get("ops") and not r.get("errors")
    else:
        continue
    if not ok:
        bad.append(line.strip())
for line in bad:
    print(f"bench: scale run incomplete: {line}", file=sys.stderr)
sys.exit(1 if bad and quick else 0)
' "$quick"
