#!/usr/bin/env bash
# The measurements behind docs/scaling.md: per-instance throughput, what one acquire+release costs
# each lock node, and what the etcd token source asks of etcd. Starts everything itself on
# loopback (5 Redis lock nodes with appendfsync always, 3 etcd members, 3 fencelockd on etcd
# tokens, 1 fencelockd on SQLite tokens under its own key prefix), runs http_bench against them
# (every run ≤ 10 s) and reads the counters Redis (INFO) and etcd (/metrics) keep. Prints one
# line per run; stops everything on exit.
#
#   scripts/measure-scaling.sh [--seconds 8] [--port-base 26000] [--preset release]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=8
base=26000
preset=release
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=${2:?}; shift ;;
    --port-base) base=${2:?}; shift ;;
    --preset) preset=${2:?}; shift ;;
    *) echo "measure-scaling: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ] || [ "$seconds" -gt 10 ]; then
  echo "measure-scaling: --seconds must be 1..10" >&2; exit 2
fi
bin=$PWD/build/$preset
for b in service/fencelockd bench/http_bench; do
  [ -x "$bin/$b" ] || { echo "measure-scaling: build $bin/$b first (cmake --build --preset $preset)" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/fencelock-scaling.XXXXXX")
pids=()
etcd_pids=()
daemon_pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for i in 1 2 3 4 5; do redis-cli -p $((base + i)) shutdown nosave >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

nodes=""
for i in 1 2 3 4 5; do
  mkdir -p "$work/redis-$i"
  redis-server --port $((base + i)) --bind 127.0.0.1 --dir "$work/redis-$i" --appendonly yes \
    --appendfsync always --save "" --daemonize yes --logfile "$work/redis-$i.log" >/dev/null
  nodes="$nodes${nodes:+,}127.0.0.1:$((base + i))"
done
initial=""
for i in 1 2 3; do initial="$initial${initial:+,}e$i=http://127.0.0.1:$((base + 30 + i))"; done
for i in 1 2 3; do
  etcd --name "e$i" --data-dir "$work/etcd-$i" \
    --listen-client-urls "http://127.0.0.1:$((base + 20 + i))" \
    --advertise-client-urls "http://127.0.0.1:$((base + 20 + i))" \
    --listen-peer-urls "http://127.0.0.1:$((base + 30 + i))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((base + 30 + i))" \
    --initial-cluster "$initial" --initial-cluster-state new --initial-cluster-token "scaling-$base" \
    --auto-compaction-mode revision --auto-compaction-retention 10000 \
    --logger zap --log-level warn >"$work/etcd-$i.log" 2>&1 &
  pids+=($!)
  etcd_pids+=($!)
done
for _ in $(seq 200); do
  curl -fs "http://127.0.0.1:$((base + 21))/health" 2>/dev/null | grep -q '"health":"true"' && break
  sleep 0.1
done
etcd_endpoints="127.0.0.1:$((base + 21)),127.0.0.1:$((base + 22)),127.0.0.1:$((base + 23))"
for i in 1 2 3; do
  "$bin/service/fencelockd" --listen "127.0.0.1:$((base + 80 + i))" --redis "$nodes" \
    --tokens "etcd://$etcd_endpoints" --token-timeout 1s --max-connections-per-client 100000 \
    >"$work/fencelockd-$i.log" 2>&1 &
  pids+=($!)
  daemon_pids+=($!)
done
"$bin/service/fencelockd" --listen "127.0.0.1:$((base + 89))" --redis "$nodes" \
  --tokens "sqlite:$work/tokens.db" --key-prefix "sqlite-run:" --max-connections-per-client 100000 \
  >"$work/fencelockd-sqlite.log" 2>&1 &
pids+=($!)
daemon_pids+=($!)
for port in $((base + 81)) $((base + 82)) $((base + 83)) $((base + 89)); do
  for _ in $(seq 200); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -fs "http://127.0.0.1:$port/readyz" >/dev/null || { echo "measure-scaling: fencelockd on $port not ready" >&2; exit 1; }
done

# CPU seconds (user + system) a set of processes has used so far.
cpu_of() {
  local total=0 p
  for p in "$@"; do
    total=$(awk -v t="$total" -v hz="$(getconf CLK_TCK)" '{printf "%.3f", t + ($14 + $15) / hz}' "/proc/$p/stat")
  done
  echo "$total"
}
redis_scripts() { redis-cli -p $((base + 1)) info commandstats | awk -F'[:=,]' '/^cmdstat_(evalsha|eval):/ {s += $3} END {print s + 0}'; }
redis_commands() { redis-cli -p $((base + 1)) info stats | awk -F: '/^total_commands_processed/ {print $2+0}'; }
redis_cpu() { redis-cli -p $((base + 1)) info cpu | awk -F: '/^used_cpu_(sys|user):/ {s += $2} END {printf "%.2f", s}'; }
# Summed over the three members: Raft proposals committed, counted once per member (÷3 later).
etcd_metric() {
  local total=0 i v
  for i in 1 2 3; do
    v=$(curl -fs "http://127.0.0.1:$((base + 20 + i))/metrics" | awk -v m="$1" '$1 == m {print $2}')
    total=$(awk -v a="$total" -v b="${v:-0}" 'BEGIN {printf "%.0f", a + b}')
  done
  echo "$total"
}

run() {  # label, http_bench arguments...
  local label=$1; shift
  local c0 s0 cpu0 p0 f0 e0 d0 out c1 s1 cpu1 p1 f1 e1 d1
  c0=$(redis_commands); s0=$(redis_scripts); cpu0=$(redis_cpu)
  p0=$(etcd_metric etcd_server_proposals_committed_total)
  f0=$(etcd_metric etcd_disk_wal_fsync_duration_seconds_count)
  e0=$(cpu_of "${etcd_pids[@]}"); d0=$(cpu_of "${daemon_pids[@]}")
  out=$("$bin/bench/http_bench" --seconds "$seconds" "$@")
  c1=$(redis_commands); s1=$(redis_scripts); cpu1=$(redis_cpu)
  p1=$(etcd_metric etcd_server_proposals_committed_total)
  f1=$(etcd_metric etcd_disk_wal_fsync_duration_seconds_count)
  e1=$(cpu_of "${etcd_pids[@]}"); d1=$(cpu_of "${daemon_pids[@]}")
  python3 - "$label" "$out" "$c0" "$c1" "$s0" "$s1" "$cpu0" "$cpu1" "$p0" "$p1" "$f0" "$f1" \
    "$e0" "$e1" "$d0" "$d1" "$seconds" <<'PY'
import json, sys
label, out = sys.argv[1], json.loads(sys.argv[2])
c0, c1, s0, s1, cpu0, cpu1, p0, p1, f0, f1, e0, e1, d0, d1, s = map(float, sys.argv[3:])
ops = out["ops_per_sec"]
n = ops * s or 1
node = (c1 - c0) / s
print(f"{label}: {ops:,.0f} ops/s (p50 {out.get('pair_p50_ms', out.get('p50_ms'))} ms, "
      f"p99 {out.get('pair_p99_ms', out.get('p99_ms'))} ms; refused {out['refused']}, "
      f"errors {out['errors']})\n"
      f"    lock node 1: {node:,.0f} commands/s, {(s1 - s0) / n:.2f} scripts and "
      f"{(c1 - c0) / n:.2f} commands per op, {1e6 * (cpu1 - cpu0) / n:.0f} µs CPU per op "
      f"({100 * (cpu1 - cpu0) / s:.0f}% of a core)\n"
      f"    fencelockd (all): {1e6 * (d1 - d0) / n:.0f} µs CPU per op ({100 * (d1 - d0) / s:.0f}% of a core)\n"
      f"    etcd: {(p1 - p0) / 3 / s:,.0f} proposals/s ({n / max(1, (p1 - p0) / 3):.1f} ops per proposal), "
      f"{(f1 - f0) / 3 / s:,.0f} WAL fsyncs/s per member, {1e6 * (e1 - e0) / n:.0f} µs CPU per op "
      f"({100 * (e1 - e0) / s:.0f}% of a core, 3 members)")
print("  raw:", json.dumps(out), file=sys.stderr)
PY
}

one=http://127.0.0.1:$((base + 81))
three="$one,http://127.0.0.1:$((base + 82)),http://127.0.0.1:$((base + 83))"
sqlite=http://127.0.0.1:$((base + 89))
echo "# $(date -u +%FT%TZ) $(nproc) cores, shared (load average $(cut -d' ' -f1-3 /proc/loadavg)); each run $seconds s"
run "sqlite, 1 instance, uncontended, 64 callers" --endpoint "$sqlite" --workload uncontended --callers 64
run "etcd, 1 instance, uncontended, 64 callers" --endpoint "$one" --workload uncontended --callers 64
run "etcd, 3 instances, uncontended, 64 callers" --endpoint "$three" --workload uncontended --callers 64
run "etcd, 1 instance, token draws, 1 caller" --endpoint "$one" --workload tokens --callers 1
run "etcd, 1 instance, token draws, 64 callers" --endpoint "$one" --workload tokens --callers 64
run "etcd, 3 instances, token draws, 192 callers" --endpoint "$three" --workload tokens --callers 192
run "sqlite, 1 instance, token draws, 64 callers" --endpoint "$sqlite" --workload tokens --callers 64
