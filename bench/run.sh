#!/usr/bin/env bash
# Benchmarks fencelock side by side with node-redlock, its maintained forks @sesamecare-oss/redlock
# and redlock-universal, etcd and ZooKeeper on this machine, in one run, on the same five Redis
# masters, and writes the report. The uncontended and token workloads are also driven by wrk (a
# witness: not our own load generator).
#
#   ./bench/run.sh           full run (~15 min): writes docs/benchmarks-side-by-side.md,
#                            docs/benchmarks.svg and the targets table in docs/benchmarks.md
#   ./bench/run.sh --quick   smoke test (~2 min): short runs, report in build/bench/ only
#   FENCELOCK_BENCH_PORT_BASE=N   its ports are N+1 .. N+89 (default 27300)
#   FENCELOCK_BENCH_PARTS="rwlock listing"   only these rows of #36 (either or both), each beside
#                            the lock row it is judged against, full or --quick: no peers, report in
#                            build/bench/benchmarks-parts.md only (docs untouched)
#
# Starts and stops everything itself: 5 redis-servers (no persistence, as peers are usually
# benchmarked), fencelockd (release build, SQLite tokens), one etcd member, one ZooKeeper server
# and a 3-server ZooKeeper ensemble (#38, bench/peers/zookeeper); then, for the
# scale-out runs, a token master (appendfsync always) and two more fencelockd on the same lock
# nodes with the Redis token source (also used for the expiry take-over runs); then one each with
# API keys, with TLS and keys, and with the etcd token source. Lock sets and semaphores (#19) run
# on the first fencelockd, beside node-redlock's multi-resource lock; so do read/write locks,
# beside its lock rows, and a listing of 10,000 held names beside grants (#36). Loopback only;
# every load run is bounded in time. Results: build/bench/results.jsonl (one JSON object per run).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
quick=0
[ "${1:-}" = "--quick" ] && quick=1

# zookeeper: the server alone, without zookeeperd's system service (it would listen on 2181 and
# 8080; bench/peers/zookeeper starts servers of its own); python3-kazoo: the ZooKeeper peer's client.
scripts/install-deps.sh etcd-server gnuplot-nox python3 wrk zookeeper python3-kazoo
# Node for the Redlock peers: Debian's packages, unless a Node with npm is already installed
# (mixing the two breaks apt).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then scripts/install-deps.sh nodejs npm; fi
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" >/dev/null
bin=$root/build/release
out=$root/build/bench
mkdir -p "$out"
results=$out/results.jsonl
: >"$results"
work=$(mktemp -d "${TMPDIR:-/tmp}/fencelock-bench-XXXXXX")
load_at_start=$(cut -d' ' -f1 /proc/loadavg)

# Another checkout's bench (or test.sh) may be running on the same machine: give it another base.
base=${FENCELOCK_BENCH_PORT_BASE:-27300}
redis_ports=$(seq $((base + 1)) $((base + 5)))
fencelockd_port=$((base + 80))
pair_ports="$((base + 81)) $((base + 82))"  # two instances sharing lock nodes and a token master
token_port=$((base + 9))
etcd_port=$((base + 79))
etcd_peer=$((base + 78))
zookeeper_port=$((base + 60))    # one ZooKeeper server
zookeeper3_port=$((base + 61))   # the ensemble: clients N+61 .. N+63, quorum and election N+64 .. N+69

cleanup() {
  for f in "$work"/*.pid; do [ -e "$f" ] && kill -TERM "$(cat "$f")" 2>/dev/null || true; done
  sleep 0.5
  for f in "$work"/*.pid; do [ -e "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null || true; done
  bench/peers/etcd/stop-etcd.sh "$work/etcd" >/dev/null 2>&1 || true
  bench/peers/zookeeper/stop-zookeeper.sh "$work/zookeeper" >/dev/null 2>&1 || true
  bench/peers/zookeeper/stop-zookeeper.sh "$work/zookeeper-3" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

nodes=""
for p in $redis_ports; do
  redis-server --port "$p" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
    --pidfile "$work/redis-$p.pid" --dir "$work" --logfile "$work/redis-$p.log" >/dev/null
  nodes="$nodes${nodes:+,}127.0.0.1:$p"
done
# Every load generator connects from 127.0.0.1: lift the per-address cap above the RSS probe's 1,001.
"$bin/service/fencelockd" --listen "127.0.0.1:$fencelockd_port" --redis "$nodes" \
  --tokens "sqlite:$work/tokens.db" --max-connections-per-client 100000 >"$work/fencelockd.log" 2>&1 &
echo $! >"$work/fencelockd.pid"
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$fencelockd_port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
if [ "$quick" = 1 ]; then seconds=1; levels="1 16"; contended_levels="16"; else seconds=5; levels="1 16 64 256"; contended_levels="16,64"; fi

record() { tee -a "$results" | sed 's/^/  /'; }
say() { echo "bench: $*" >&2; }
# CPU per operation (utime + stime from /proc, in clock ticks) next to the throughput: it depends
# far less than the throughput on what else runs on the shared cores.
cpu_ticks() {  # cpu_ticks PID[,PID...]: their CPU so far, summed
  local pid ticks=0
  for pid in ${1//,/ }; do ticks=$((ticks + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done
  echo "$ticks"
}
with_cpu() {  # with_cpu KEY PID[,PID...] TICKS_BEFORE: adds KEY (ms of their CPU per op) to the JSON line
  local line ticks
  line=$(cat)
  ticks=$(($(cpu_ticks "$2") - $3))
  echo "$line" | python3 -c "import json, os, sys; r = json.loads(sys.stdin.read()); \
r['$1'] = $ticks * 1000 / os.sysconf('SC_CLK_TCK') / max(r['ops'], 1); print(json.dumps(r))"
}
with_server_cpu() { with_cpu server_cpu_ms_per_op "$@"; }

# --- #36: read/write locks beside the lock, and listing held names beside grants ---
# The level #36's targets are judged at: 64 callers (16 in a quick run), as #15's and #16's.
judged_36=$(echo "$levels" | awk '{print ($NF > 64 ? 64 : $NF)}')
# with_node_cpu RUN...: runs RUN and adds fencelockd's CPU per op and the five lock nodes' (all
# together, nodes_cpu_ms_per_op) to its JSON line.
node_pids=$(for p in $redis_ports; do cat "$work/redis-$p.pid"; done | paste -sd,)
with_node_cpu() {
  local pid t0 n0
  pid=$(cat "$work/fencelockd.pid")
  t0=$(cpu_ticks "$pid")
  n0=$(cpu_ticks "$node_pids")
  "$@" | with_server_cpu "$pid" "$t0" | with_cpu nodes_cpu_ms_per_op "$node_pids" "$n0"
}
# rwlock_rows C: uncontended read/write locks at C callers, read mode then write mode, each caller
# on its own names (http_bench --workload rwlock), on the first fencelockd right after its lock row
# at C callers. At the level the targets are judged at (64 callers, quick: 16) the runs go on
# write, read and the lock again (tagged "set": "rwlock"): lock, read, write, write, read, lock,
# so that a load drifting during them weighs on both sides of the ratio. report.py: section 8c.
rwlock_rows() {
  local mode modes="read write"
  [ "$1" = "$judged_36" ] && modes="read write write read lock"
  for mode in $modes; do
    if [ "$mode" = lock ]; then
      say "fencelock (HTTP) uncontended, $1 callers, again after the read/write locks"
      with_node_cpu "$bin/bench/http_bench" --endpoint "http://127.0.0.1:$fencelockd_port" --workload uncontended \
        --callers "$1" --seconds "$seconds" | sed 's/^{/{"set": "rwlock", /' | record
      continue
    fi
    say "fencelock read/write lock ($mode) uncontended, $1 callers"
    with_node_cpu "$bin/bench/http_bench" --endpoint "http://127.0.0.1:$fencelockd_port" --workload rwlock \
      --mode "$mode" --callers "$1" --seconds "$seconds" | record
  done
}
# listing_rows: 10,000 names (quick: 1,000) taken on the first fencelockd with a ttl that outlasts
# these rows (bounded: 60 s to take them, quick 10 s); a lister alone (one connection paging
# GET /v1/locks?prefix=held-&limit=1000 in a loop, http_bench --workload list); then the
# uncontended lock workload at 64 callers (quick: 16) alone, beside a lister, beside, alone (ABBA,
# 10 s each; quick: alone, beside, 1 s), with fencelockd's and the lock nodes' CPU per pair. Rows
# carry "set": "listing" (report.py, section 8d; kept out of the other tables), the grant and
# lister rows "side".
listing() { sed "s/^{/{\"set\": \"listing\", /"; }
listing_rows() {
  local held=10000 take_seconds=60 ttl_ms=300000 run_seconds=10 sides="alone beside beside alone" side lister
  [ "$quick" = 1 ] && held=1000 take_seconds=10 ttl_ms=60000 run_seconds=1 sides="alone beside"
  local list=("$bin/bench/http_bench" --endpoint "http://127.0.0.1:$fencelockd_port" --workload list --callers 1
    --names "$held" --prefix held- --limit 1000 --seconds "$run_seconds")
  say "fencelock: taking $held names (ttl $((ttl_ms / 1000)) s) to list, $judged_36 callers"
  "$bin/bench/http_bench" --endpoint "http://127.0.0.1:$fencelockd_port" --workload hold --names "$held" \
    --prefix held- --ttl-ms "$ttl_ms" --callers "$judged_36" --seconds "$take_seconds" | listing | record
  say "fencelock: listing $held held names alone"
  "${list[@]}" | sed 's/^{/{"side": "alone", /' | listing | record
  for side in $sides; do
    say "fencelock uncontended, $judged_36 callers, $([ "$side" = alone ] && echo alone || echo "beside a lister of $held names")"
    lister=""
    if [ "$side" = beside ]; then
      "${list[@]}" >"$work/lister.json" &
      lister=$!
    fi
    with_node_cpu "$bin/bench/http_bench" --endpoint "http://127.0.0.1:$fencelockd_port" --workload uncontended \
      --callers "$judged_36" --seconds "$run_seconds" | sed "s/^{/{\"side\": \"$side\", /" | listing | record
    if [ -n "$lister" ]; then
      wait "$lister"
      sed 's/^{/{"side": "beside", /' "$work/lister.json" | listing | record
    fi
  done
}
# The smoke test of #36's rows (no timing): every read/write lock run completed pairs, every name
# to list was taken, and no whole listing missed one. Errors are counted in the report, not failed
# on: on a busy machine a lock node's time-out fails a few requests.
check_36() {
  python3 - "$results" "$parts_36" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
parts = sys.argv[2].split()
bad = []
if "rwlock" in parts:
    for mode in ("read", "write"):
        runs = [r for r in rows if r.get("workload") == "rwlock" and r.get("mode") == mode]
        if not runs or any(not r.get("ops") for r in runs):
            bad.append(f"read/write lock ({mode}): {runs}")
if "listing" in parts:
    listing = [r for r in rows if r.get("set") == "listing"]
    hold = [r for r in listing if r.get("workload") == "hold"]
    lists = [r for r in listing if r.get("workload") == "list"]
    grants = [r for r in listing if r.get("workload") == "uncontended"]
    if not hold or hold[0]["ops"] < hold[0]["wanted"]:
        bad.append(f"names to list not all taken: {hold}")
    # A lister beside the grants may finish no whole listing in a 1 s run; the one alone must.
    if not lists or any(not r.get("ops") or r.get("short_passes") for r in lists) or \
            not any(r.get("passes") for r in lists if r.get("side") == "alone"):
        bad.append(f"listing incomplete: {lists}")
    if not grants or any(not r.get("ops") for r in grants):
        bad.append(f"grants beside the listing: {grants}")
for line in bad:
    print(f"bench: #36 row failed: {line}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}
# --- end #36 ---

# FENCELOCK_BENCH_PARTS: #36's rows alone (the lock row beside them is what they are judged by).
parts=${FENCELOCK_BENCH_PARTS:-}
parts_36=${parts:-rwlock listing}  # what check_36 checks
if [ -n "$parts" ]; then
  for c in $levels; do
    say "fencelock (HTTP) uncontended, $c callers"
    "$bin/bench/http_bench" --endpoint "http://127.0.0.1:$fencelockd_port" --workload uncontended --callers "$c" --seconds "$seconds" | record
    if [[ " $parts " == *" rwlock "* ]]; then rwlock_rows "$c"; fi
  done
  if [[ " $parts " == *" listing "* ]]; then listing_rows; fi
  printf 'machine: %s cores, %s GiB, %s\nload average (1 min) at start: %s, at end: %s\nmode: %s (parts: %s), %ss per run\n' \
    "$(nproc)" "$(free -g | awk '/Mem:/ {print $2}')" "$(. /etc/os-release; echo "$PRETTY_NAME")" "$load_at_start" \
    "$(cut -d' ' -f1 /proc/loadavg)" "$([ "$quick" = 1 ] && echo quick || echo full)" "$parts" "$seconds" >"$out/environment.txt"
  python3 bench/report.py "$results" "$out/environment.txt" "$out/benchmarks-parts.md" ""
  say "parts done: $out/benchmarks-parts.md (docs untouched)"
  check_36
  exit
fi
bench/peers/etcd/start-etcd.sh "$work/etcd" "$etcd_port" "$etcd_peer" >/dev/null
# Both ZooKeepers start together (a JVM each: about 2 s) and stay up, idle between their runs.
bench/peers/zookeeper/start-zookeeper.sh "$work/zookeeper" "$zookeeper_port" 1 >"$work/zookeeper.hosts" &
zookeeper_start=$!
bench/peers/zookeeper/start-zookeeper.sh "$work/zookeeper-3" "$zookeeper3_port" 3 >"$work/zookeeper-3.hosts" &
wait "$zookeeper_start"
wait $!

# #38: a JVM compiles its hot paths during its first thousands of requests (Redis, etcd and
# fencelockd are native code): one unrecorded run on each ZooKeeper, both at once, before any row.
zookeeper_warm=()
for system in zookeeper zookeeper-3; do
  /usr/bin/python3 bench/peers/zookeeper/bench.py --hosts "$(cat "$work/$system.hosts")" --workload uncontended \
    --callers 16 --seconds "$seconds" >/dev/null 2>&1 &
  zookeeper_warm+=($!)
done
wait "${zookeeper_warm[@]}"

# --- #20: more Redlock peers, and wrk as a witness load generator (called from the loops below) ---
# The maintained Redlock libraries beside node-redlock, through the same driver (bench/peers/redlock,
# one adapter per library) on the same five nodes, right after node-redlock's run at each level:
# uncontended with one attempt per acquire (as node-redlock), contended with each library's default
# retry settings.
fork_libraries="sesamecare-redlock redlock-universal"
redlock_forks() {  # redlock_forks WORKLOAD CALLERS [HOLD_MS]
  local lib
  for lib in $fork_libraries; do
    say "$lib $1, $2 callers${3:+, hold $3 ms}"
    bench/peers/redlock/run.sh "$out/redlock" -- --library "$lib" --redis "$nodes" --workload "$1" \
      --callers "$2" --seconds "$seconds" ${3:+--hold-ms "$3"} | if [ -n "${3:-}" ]; then tag "$3"; else cat; fi | record
  done
}
# wrk 4.1 (Debian) with our Lua scripts (bench/wrk/) against the same fencelockd as http_bench, at
# the same caller counts: C keep-alive connections, one request in flight on each, over
# min(C, 2) threads. Its line carries "loader": "wrk"; its latencies are per request.
wrk_witness() {  # wrk_witness WORKLOAD CALLERS
  local threads=$(($2 < 2 ? $2 : 2))
  say "fencelock (HTTP) $1 driven by wrk, $2 connections"
  wrk -t "$threads" -c "$2" -d "${seconds}s" --timeout 5s -s "bench/wrk/$1.lua" \
    "http://127.0.0.1:$fencelockd_port" -- "$2" 10000 "wrk$2-" | sed -n '/^{/p' | record
}
# --- end #20 ---

# --- #38: ZooKeeper beside etcd (bench/peers/zookeeper): one server and a 3-server ensemble,
# ZooKeeper's lock recipe through Debian's python3-kazoo (its Lock), every caller a session of its
# own. Uncontended up to 64 callers (the issue's 1/16/64), contended wherever etcd runs. The
# servers' CPU per op (all three for the ensemble) is on each row.
zookeeper_peers() {  # zookeeper_peers WORKLOAD CALLERS [HOLD_MS]
  local system dir
  for system in zookeeper zookeeper-3; do
    dir=$work/$system
    say "$system $1, $2 callers${3:+, hold $3 ms}"
    /usr/bin/python3 bench/peers/zookeeper/bench.py --hosts "$(cat "$dir.hosts")" --system "$system" \
      --server-pids "$(cat "$dir"/server-*/zookeeper.pid | paste -sd,)" --workload "$1" --callers "$2" \
      --seconds "$seconds" ${3:+--hold-ms "$3"} | if [ -n "${3:-}" ]; then tag "$3"; else cat; fi | record
  done
}
# --- end #38 ---

for c in $levels; do
  say "fencelock (HTTP) uncontended, $c callers"
  "$bin/bench/http_bench" --endpoint "http://127.0.0.1:$fencelockd_port" --workload uncontended --callers "$c" --seconds "$seconds" | record
  rwlock_rows "$c"
  wrk_witness uncontended "$c"
  say "fencelock engine (in-process) uncontended, $c callers"
  "$bin/bench/engine_bench" --redis "$nodes" --callers "$c" --seconds "$seconds" --json | record
  say "node-redlock uncontended, $c callers"
  bench/peers/redlock/run.sh "$out/redlock" -- --redis "$nodes" --workload uncontended --callers "$c" --seconds "$seconds" | record
  redlock_forks uncontended "$c"
  say "etcd uncontended, $c callers"
  node bench/peers/etcd/bench.js --endpoint "http://127.0.0.1:$etcd_port" --workload uncontended --callers "$c" --seconds "$seconds" | record
  if [ "$c" -le 64 ]; then zookeeper_peers uncontended "$c"; fi
done
# Contended runs hold the lock for --hold-ms; the full run adds a zero-hold set, where the hand-off
# itself is all there is (with a 1 ms hold no system can pass 1000 hand-offs/s).
tag() { sed "s/^{/{\"hold_ms\":$1,/"; }
contended_runs="1:$contended_levels"
[ "$quick" = 0 ] && contended_runs="$contended_runs 0:16"
for run in $contended_runs; do
  hold=${run%%:*}
  for c in $(echo "${run#*:}" | tr ',' ' '); do
    say "fencelock contended, $c callers, hold $hold ms"
    "$bin/bench/http_bench" --endpoint "http://127.0.0.1:$fencelockd_port" --workload contended --callers "$c" --seconds "$seconds" --hold-ms "$hold" | tag "$hold" | record
    say "fencelock engine (in-process) contended, $c callers, hold $hold ms"
    "$bin/bench/engine_bench" --redis "$nodes" --workload contended --callers "$c" --seconds "$seconds" --hold-ms "$hold" --json | tag "$hold" | record
    say "node-redlock contended, $c callers, hold $hold ms"
    bench/peers/redlock/run.sh "$out/redlock" -- --redis "$nodes" --workload contended --callers "$c" --seconds "$seconds" --hold-ms "$hold" | tag "$hold" | record
    redlock_forks contended "$c" "$hold"
    say "etcd contended, $c callers, hold $hold ms"
    node bench/peers/etcd/bench.js --endpoint "http://127.0.0.1:$etcd_port" --workload contended --callers "$c" --seconds "$seconds" --hold-ms "$hold" | tag "$hold" | record
    zookeeper_peers contended "$c" "$hold"
  done
done
# Lock sets and semaphores (#19) on the first fencelockd, beside node-redlock's multi-resource
# lock (redlock.acquire([r1, r2, r3, r4], ttl)) on the same nodes. Sets of 4 names: pool 0 = each
# caller always its own four names (no two callers meet: what a set costs); pool 8 = four out of 8
# shared names, sent in random order, with wait_ms (overlapping sets queue on each other;
# node-redlock retries with its defaults). Semaphores (fencelock only, node-redlock has none):
# 8 semaphores of 8 permits, caller i on semaphore i mod 8 (at 64 callers nobody waits for a
# permit: what a permit costs), then one semaphore of 8 permits for all callers (they queue).
set_callers=64
[ "$quick" = 1 ] && set_callers=16
for pool in 0 8; do
  say "fencelock lock sets of 4 names, pool $pool, $set_callers callers"
  "$bin/bench/http_bench" --endpoint "http://127.0.0.1:$fencelockd_port" --workload set --set-size 4 \
    --set-pool "$pool" --callers "$set_callers" --seconds "$seconds" | record
  say "node-redlock multi-resource lock of 4, pool $pool, $set_callers callers"
  bench/peers/redlock/run.sh "$out/redlock" -- --redis "$nodes" --workload multi --set-size 4 \
    --set-pool "$pool" --callers "$set_callers" --seconds "$seconds" | record
done
for layout in 8:8 1:8; do
  say "fencelock semaphores: ${layout%%:*} of ${layout##*:} permits, $set_callers callers"
  "$bin/bench/http_bench" --endpoint "http://127.0.0.1:$fencelockd_port" --workload semaphore \
    --semaphores "${layout%%:*}" --permits "${layout##*:}" --callers "$set_callers" --seconds "$seconds" | record
done

say "two fencelockd instances (Redis token source) on the same lock nodes"
redis-server --port "$token_port" --bind 127.0.0.1 --save "" --appendonly yes --appendfsync always \
  --daemonize yes --pidfile "$work/redis-$token_port.pid" --dir "$work" --logfile "$work/redis-$token_port.log" >/dev/null
pair_endpoints=""
for p in $pair_ports; do
  # A deployment of its own on the same nodes (its own key prefix): the nodes remember that the
  # first fencelockd's SQLite file served the default prefix, and refuse another token store there.
  "$bin/service/fencelockd" --listen "127.0.0.1:$p" --redis "$nodes" --tokens "redis://127.0.0.1:$token_port" \
    --token-epoch-file "$work/epoch-$p" --key-prefix "bench-pair:" >"$work/fencelockd-$p.log" 2>&1 &
  echo $! >"$work/fencelockd-$p.pid"
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$p/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
  pair_endpoints="$pair_endpoints${pair_endpoints:+,}http://127.0.0.1:$p"
done
pair_runs="1:16"
[ "$quick" = 0 ] && pair_runs="1:16,64 0:16"
for run in $pair_runs; do
  hold=${run%%:*}
  for c in $(echo "${run#*:}" | tr ',' ' '); do
    say "fencelock x2 contended, $c callers split over both, hold $hold ms"
    "$bin/bench/http_bench" --endpoint "$pair_endpoints" --system fencelock-x2 --workload contended --callers "$c" \
      --seconds "$seconds" --hold-ms "$hold" | tag "$hold" | record
  done
done
pair_uncontended=$(echo "$levels" | awk '{print ($NF > 64 ? 64 : $NF)}')  # 64, or the largest quick level
say "fencelock x2 uncontended, $pair_uncontended callers split over both"
"$bin/bench/http_bench" --endpoint "$pair_endpoints" --system fencelock-x2 --workload uncontended \
  --callers "$pair_uncontended" --seconds "$seconds" | record
# Draws per second from the Redis token source (#15), through one of the two instances.
draw_levels="1 64"
[ "$quick" = 1 ] && draw_levels=64
for c in $draw_levels; do
  say "fencelock tokens, Redis token source, $c callers"
  "$bin/bench/http_bench" --endpoint "http://127.0.0.1:${pair_ports%% *}" --system fencelock-tokens-redis \
    --workload tokens --callers "$c" --seconds "$seconds" | record
done
# Expiry take-over (#19): a holder acquires with a 200 ms ttl through the first instance and never
# releases; a waiter already refused and waiting (wait_ms 2 s) through the same or the other
# instance. bench/expiry_bench says how its reference points are defined. node-redlock's take-over
# of an expired lock, with its default retry settings, on the same nodes for comparison.
expiry_rounds=50
[ "$quick" = 1 ] && expiry_rounds=5
pair_a=http://127.0.0.1:${pair_ports%% *}
pair_b=http://127.0.0.1:${pair_ports##* }
for placement in same other; do
  waiter=$pair_a
  [ "$placement" = other ] && waiter=$pair_b
  say "fencelock x2 expiry take-over, waiter on the $placement instance, $expiry_rounds rounds, ttl 200 ms"
  timeout 120 "$bin/bench/expiry_bench" --holder "$pair_a" --waiter "$waiter" --system fencelock-x2 \
    --placement "$placement" --rounds "$expiry_rounds" --ttl-ms 200 --wait-ms 2000 --max-seconds 90 | record
done
say "node-redlock expiry take-over, default retries, $expiry_rounds rounds, ttl 200 ms"
timeout 120 bench/peers/redlock/run.sh "$out/redlock" -- --redis "$nodes" --workload expiry \
  --rounds "$expiry_rounds" --ttl-ms 200 | record
for p in $pair_ports; do kill -TERM "$(cat "$work/fencelockd-$p.pid")" 2>/dev/null || true; done

# The cost of API keys (#16): a fencelockd with --auth-file (its own key prefix and SQLite file),
# every request with a Bearer key: the SHA-256 of the secret, the lookup, the rights and names.
keys_port=$((base + 83))  # a fencelockd with --auth-file
"$bin/service/fencelockd" keys new --id bench --names '*' --rights lock,read,token \
  >"$work/bench-key.txt" 2>/dev/null
bench_secret=$(sed -n 1p "$work/bench-key.txt")
printf '{"keys": [%s]}\n' "$(sed -n 2p "$work/bench-key.txt")" >"$work/keys.json"
"$bin/service/fencelockd" --listen "127.0.0.1:$keys_port" --redis "$nodes" --tokens "sqlite:$work/tokens-keys.db" \
  --key-prefix "bench-keys:" --auth-file "$work/keys.json" --max-connections-per-client 100000 \
  >"$work/fencelockd-keys.log" 2>&1 &
echo $! >"$work/fencelockd-keys.pid"
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$keys_port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
say "fencelock with API keys uncontended, $pair_uncontended callers"
"$bin/bench/http_bench" --endpoint "http://127.0.0.1:$keys_port" --system fencelock-keys --workload uncontended \
  --callers "$pair_uncontended" --seconds "$seconds" --api-key "$bench_secret" | record
kill -TERM "$(cat "$work/fencelockd-keys.pid")" 2>/dev/null || true

# A/B beside the plain-HTTP fencelockd of the side-by-side rows, so that both sides of a ratio see
# the same machine load (others' work shares the cores): beside SET C SYSTEM ENDPOINT PID [ARGS...]
# runs the uncontended workload at C callers as plain, SYSTEM, SYSTEM, plain (ABBA: a load that
# drifts during the four runs weighs on both sides alike; a quick run does plain, SYSTEM only),
# 10 s each at the judged level of a full run. PID is SYSTEM's fencelockd; with peer_pid set, that
# process's CPU per pair is added as peer_cpu_ms_per_op on both sides. Rows carry "set":SET;
# report.py averages each side.
peer_pid=""
beside() {
  local set=$1 c=$2 system=$3 endpoint=$4 pid=$5
  shift 5
  local side t0 p0 run_seconds=$seconds sides="plain other other plain"
  [ "$quick" = 1 ] && sides="plain other"
  [ "$quick" = 0 ] && [ "$c" = "$judged" ] && run_seconds=10
  for side in $sides; do
    local args=(--workload uncontended --callers "$c" --seconds "$run_seconds") target=$pid
    if [ "$side" = plain ]; then
      say "fencelock (HTTP, SQLite tokens) uncontended, $c callers, beside $system"
      args+=(--endpoint "http://127.0.0.1:$fencelockd_port")
      target=$(cat "$work/fencelockd.pid")
    else
      say "$system uncontended, $c callers"
      args+=(--endpoint "$endpoint" --system "$system" "$@")
    fi
    t0=$(cpu_ticks "$target")
    p0=$([ -n "$peer_pid" ] && cpu_ticks "$peer_pid" || echo 0)
    "$bin/bench/http_bench" "${args[@]}" | with_server_cpu "$target" "$t0" |
      if [ -n "$peer_pid" ]; then with_cpu peer_cpu_ms_per_op "$peer_pid" "$p0"; else cat; fi |
      sed "s/^{/{\"set\": \"$set\", /" | record
  done
}
# The level the #15/#16 targets are judged at: 64 callers (16 in a quick run).
judged=$pair_uncontended

# The cost of TLS (#16): a fencelockd with TLS and API keys (its own key prefix and SQLite file),
# a throwaway CA and server certificate (EC P-256, as in docs/operations.md), clients that check
# it. Keep-alive connections for the pairs; a new connection with a full handshake per request
# for the handshake rate (and the same over plain TCP for comparison).
tls_port=$((base + 84))
tls=$work/tls
mkdir -p "$tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj "/CN=fencelock bench CA" -keyout "$tls/ca.key" -out "$tls/ca.pem" 2>/dev/null
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=127.0.0.1" \
  -keyout "$tls/server.key" -out "$tls/server.csr" 2>/dev/null
openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -set_serial 1 -days 2 \
  -out "$tls/server.pem" -extfile <(printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth') 2>/dev/null
chmod 600 "$tls/server.key"
"$bin/service/fencelockd" --listen "127.0.0.1:$tls_port" --redis "$nodes" --tokens "sqlite:$work/tokens-tls.db" \
  --key-prefix "bench-tls:" --auth-file "$work/keys.json" --tls-cert "$tls/server.pem" --tls-key "$tls/server.key" \
  --max-connections-per-client 100000 >"$work/fencelockd-tls.log" 2>&1 &
echo $! >"$work/fencelockd-tls.pid"
for _ in $(seq 100); do curl -fs --cacert "$tls/ca.pem" "https://127.0.0.1:$tls_port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
tls_levels=$judged
[ "$quick" = 0 ] && tls_levels=$levels
for c in $tls_levels; do
  beside tls "$c" fencelock-tls "https://127.0.0.1:$tls_port" "$(cat "$work/fencelockd-tls.pid")" --api-key "$bench_secret" --ca-file "$tls/ca.pem"
done
say "fencelock over TLS: a new connection (full handshake) per request, 16 callers"
t0=$(cpu_ticks "$(cat "$work/fencelockd-tls.pid")")
"$bin/bench/http_bench" --endpoint "https://127.0.0.1:$tls_port" --system fencelock-tls --workload connections \
  --callers 16 --seconds "$seconds" --ca-file "$tls/ca.pem" | with_server_cpu "$(cat "$work/fencelockd-tls.pid")" "$t0" | record
say "fencelock over plain HTTP: a new connection per request, 16 callers"
t0=$(cpu_ticks "$(cat "$work/fencelockd.pid")")
"$bin/bench/http_bench" --endpoint "http://127.0.0.1:$fencelockd_port" --workload connections \
  --callers 16 --seconds "$seconds" | with_server_cpu "$(cat "$work/fencelockd.pid")" "$t0" | record
kill -TERM "$(cat "$work/fencelockd-tls.pid")" 2>/dev/null || true

# The etcd token source (#15): a fencelockd drawing its tokens from the etcd member the peer runs
# use (its own key prefix on the lock nodes), beside the SQLite one; and its draws per second.
etcd_tokens_port=$((base + 85))
"$bin/service/fencelockd" --listen "127.0.0.1:$etcd_tokens_port" --redis "$nodes" \
  --tokens "etcd://127.0.0.1:$etcd_port" --key-prefix "bench-etcd:" --max-connections-per-client 100000 \
  >"$work/fencelockd-etcd.log" 2>&1 &
echo $! >"$work/fencelockd-etcd.pid"
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$etcd_tokens_port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
peer_pid=$(cat "$work/etcd/etcd.pid")
beside etcd "$judged" fencelock-tokens-etcd "http://127.0.0.1:$etcd_tokens_port" "$(cat "$work/fencelockd-etcd.pid")"
peer_pid=""
for c in $draw_levels; do
  say "fencelock tokens, etcd token source, $c callers"
  "$bin/bench/http_bench" --endpoint "http://127.0.0.1:$etcd_tokens_port" --system fencelock-tokens-etcd \
    --workload tokens --callers "$c" --seconds "$seconds" | record
done
kill -TERM "$(cat "$work/fencelockd-etcd.pid")" 2>/dev/null || true

# ---- #20: the refusal path (refused acquires answer retry_after_ms with no second broadcast) ----
# Callers on 4 names held for the whole run, each acquire without wait: every answer a 409 locked
# (ops = refusals), with fencelockd's CPU per refusal beside it.
refusal_levels="16 64"
[ "$quick" = 1 ] && refusal_levels=16
for c in $refusal_levels; do
  say "fencelock refused acquires: $c callers on 4 held names, no wait"
  t0=$(cpu_ticks "$(cat "$work/fencelockd.pid")")
  "$bin/bench/http_bench" --endpoint "http://127.0.0.1:$fencelockd_port" --workload refused --names 4 \
    --callers "$c" --seconds "$seconds" | with_server_cpu "$(cat "$work/fencelockd.pid")" "$t0" | record
done
# ---- end of #20's refusal path ----

for w in extend tokens; do
  for c in 1 64; do
    say "fencelock $w, $c callers"
    "$bin/bench/http_bench" --endpoint "http://127.0.0.1:$fencelockd_port" --workload "$w" --callers "$c" --seconds "$seconds" | record
    if [ "$w" = tokens ]; then wrk_witness tokens "$c"; fi
  done
done

say "fencelockd memory with 1000 idle keep-alive connections"
"$bin/bench/http_bench" --endpoint "http://127.0.0.1:$fencelockd_port" --workload idle --callers 1000 --seconds 4 >/dev/null &
idle=$!
sleep 3
rss_kib=$(awk '/VmRSS/ {print $2}' "/proc/$(cat "$work/fencelockd.pid")/status")
open=$(curl -fs "http://127.0.0.1:$fencelockd_port/metrics" | awk '/^fencelock_http_open_connections / {print $2}')
wait "$idle" || true
echo "{\"system\":\"fencelock\",\"workload\":\"rss\",\"connections\":${open:-0},\"rss_kib\":$rss_kib}" | record

# #36: listing 10,000 held names beside grants, last on the first fencelockd (its held names expire
# after these rows; bench/scale.sh below has lock nodes of its own).
listing_rows

# The cost as the work grows (#20): names, waiters, idle connections, lock nodes. bench/scale.sh
# starts lock nodes and fencelockd of its own (ports N+40 .. N+50); full: ~4 min, quick: ~40 s.
bench/scale.sh $([ "$quick" = 1 ] && echo --quick) "$results"

{
  echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(. /etc/os-release; echo "$PRETTY_NAME")"
  echo "redis-server: $(redis-server --version | awk '{print $3}')"
  echo "etcd: $(etcd --version 2>/dev/null | head -n1)"
  echo "zookeeper: $(dpkg-query -W -f='${Version}' zookeeper 2>/dev/null), python3-kazoo $(dpkg-query -W -f='${Version}' python3-kazoo 2>/dev/null)"
  echo "node: $(node --version)"
  echo "wrk: $(wrk --version 2>&1 | head -n1 | cut -d' ' -f1-3)"
  echo "g++: $(g++ --version | head -n1)"
  # Others' work on the same cores moves every number: say how busy the machine was.
  echo "load average (1 min) at start: $load_at_start, at end: $(cut -d' ' -f1 /proc/loadavg)"
  echo "mode: $([ "$quick" = 1 ] && echo quick || echo full), ${seconds}s per run"
} >"$out/environment.txt"

if [ "$quick" = 1 ]; then
  python3 bench/report.py "$results" "$out/environment.txt" "$out/benchmarks-quick.md" ""
  say "quick run done: $out/benchmarks-quick.md (docs untouched)"
  # The smoke test of #19's primitives (no timing): every set and semaphore run granted something.
  python3 - "$results" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
bad = [r for r in rows if r.get("workload") in ("set", "multi", "semaphore") and not r.get("ops")]
for r in bad:
    print(f"bench: no pair completed: {json.dumps(r)}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
  # The smoke test of #20's rows (no timing): every Redlock fork and every wrk workload ran and
  # completed something.
  python3 - "$results" $fork_libraries <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
wanted = [(fork, None, w) for fork in sys.argv[2:] for w in ("uncontended", "contended")]
wanted += [("fencelock", "wrk", w) for w in ("uncontended", "tokens")]
bad = [want for want in wanted
       if not any((r.get("system"), r.get("loader"), r.get("workload")) == want and r.get("ops") for r in rows)]
for system, loader, workload in bad:
    print(f"bench: no {workload} row of {system}{' by ' + loader if loader else ''} completed anything", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
  # The smoke test of #38's rows (no timing): both ZooKeepers completed pairs and hand-offs.
  check_36
  python3 - "$results" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
wanted = [(s, w) for s in ("zookeeper", "zookeeper-3") for w in ("uncontended", "contended")]
bad = [want for want in wanted if not any((r.get("system"), r.get("workload")) == want and r.get("ops") for r in rows)]
for system, workload in bad:
    print(f"bench: no {workload} row of {system} completed anything", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
else
  python3 bench/report.py "$results" "$out/environment.txt" docs/benchmarks-side-by-side.md docs/benchmarks.svg \
    docs/benchmarks.md
  say "done: docs/benchmarks-side-by-side.md, docs/benchmarks.svg"
fi
