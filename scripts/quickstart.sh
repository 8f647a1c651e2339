#!/usr/bin/env bash
# fencelock in one command: installs what is missing, builds, starts five local Redis masters
# (appendonly, fsync always), fencelockd (SQLite tokens) and two resource stores (one fenced, one
# not), waits until fencelockd is ready, runs the Kleppmann demo and prints what to try next.
# Everything keeps running in the run directory; `--stop` stops it. Running it again restarts it.
#
#   ./scripts/quickstart.sh [--stop] [--preset release|asan] [--run-dir DIR] [--port-base N]
#
# Ports: Redis N+1..N+5, fencelockd N+80, fenced store N+90, unfenced store N+91 (N = 7000).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

preset=release
run_dir=$root/run
port_base=${FENCELOCK_QUICKSTART_PORT_BASE:-7000}
stop_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --stop) stop_only=1 ;;
    --preset) preset=$2; shift ;;
    --run-dir) run_dir=$2; shift ;;
    --port-base) port_base=$2; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "quickstart: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

stop_all() {
  [ -d "$run_dir" ] || return 0
  local pidfile pid
  for pidfile in "$run_dir"/*.pid; do
    [ -e "$pidfile" ] || continue
    pid=$(cat "$pidfile" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
  done
}

if [ "$stop_only" = 1 ]; then
  stop_all
  echo "quickstart: stopped everything in $run_dir"
  exit 0
fi

scripts/install-deps.sh
echo "quickstart: building ($preset)…"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)" >/dev/null
bin=$root/build/$preset

stop_all  # a second run starts from a clean slate
mkdir -p "$run_dir"
rm -rf "$run_dir"/redis-* "$run_dir"/*.db* "$run_dir"/*.log

fencelockd_port=$((port_base + 80))
fenced_port=$((port_base + 90))
unfenced_port=$((port_base + 91))
nodes=""
for i in 1 2 3 4 5; do
  port=$((port_base + i))
  mkdir -p "$run_dir/redis-$i"
  redis-server --port "$port" --bind 127.0.0.1 --dir "$run_dir/redis-$i" --appendonly yes \
    --appendfsync always --save "" --daemonize yes --pidfile "$run_dir/redis-$i.pid" \
    --logfile "$run_dir/redis-$i.log" >/dev/null
  nodes="$nodes${nodes:+,}127.0.0.1:$port"
done

start() {  # name, command...
  local name=$1; shift
  nohup "$@" >"$run_dir/$name.log" 2>&1 &
  echo $! >"$run_dir/$name.pid"
}
start fencelockd "$bin/service/fencelockd" --listen "127.0.0.1:$fencelockd_port" --redis "$nodes" \
  --tokens "sqlite:$run_dir/tokens.db"
start store-fenced "$bin/examples/resource-store" --listen "127.0.0.1:$fenced_port" \
  --db "$run_dir/store-fenced.db" --log "$run_dir/store-fenced.ops.log" --mode fenced
start store-unfenced "$bin/examples/resource-store" --listen "127.0.0.1:$unfenced_port" \
  --db "$run_dir/store-unfenced.db" --log "$run_dir/store-unfenced.ops.log" --mode unfenced

echo -n "quickstart: waiting for fencelockd to be ready"
for _ in $(seq 200); do
  if curl -fs "http://127.0.0.1:$fencelockd_port/readyz" >/dev/null 2>&1 &&
     curl -fs "http://127.0.0.1:$fenced_port/healthz" >/dev/null 2>&1 &&
     curl -fs "http://127.0.0.1:$unfenced_port/healthz" >/dev/null 2>&1; then
    ready=1; break
  fi
  echo -n .; sleep 0.1
done
echo
if [ "${ready:-0}" != 1 ]; then
  echo "quickstart: fencelockd did not become ready; see $run_dir/fencelockd.log" >&2
  tail -n 20 "$run_dir/fencelockd.log" >&2 || true
  exit 1
fi

status=0
"$bin/examples/kleppmann-demo" --fencelock "http://127.0.0.1:$fencelockd_port" \
  --fenced-store "http://127.0.0.1:$fenced_port" --unfenced-store "http://127.0.0.1:$unfenced_port" || status=$?

cat <<EOT

fencelock is running (logs and data in $run_dir):
  fencelockd        http://127.0.0.1:$fencelockd_port   (metrics: /metrics, readiness: /readyz)
  fenced store      http://127.0.0.1:$fenced_port
  unfenced store    http://127.0.0.1:$unfenced_port
  Redis lock nodes  $nodes

Try:
  curl -s -X POST 127.0.0.1:$fencelockd_port/v1/locks/invoice-42 -d '{"ttl_ms": 30000}'
  curl -s 127.0.0.1:$fencelockd_port/v1/locks/invoice-42
  $bin/client-sdk/fencelock --endpoint http://127.0.0.1:$fencelockd_port run --ttl 10s nightly -- sh -c 'echo token \$FENCELOCK_TOKEN'
  curl -s -X PUT 127.0.0.1:$fenced_port/objects/report -H 'Fencing-Token: 1' -d 'hello'

This fencelockd is open to anyone who can connect and speaks plain HTTP (fine on loopback).
Before sharing it, turn on API keys and TLS (docs/operations.md, "Securing fencelock"):
  $bin/service/fencelockd keys new --id app --names 'app.*' --rights lock,read
      prints a secret for the client and a line for the --auth-file's "keys" list
  restart fencelockd with --auth-file keys.json --tls-cert server.pem --tls-key server.key
      (openssl commands for a CA and certificates are in that section)
  clients: fencelock --endpoint https://HOST:PORT --cacert ca.pem, with FENCELOCK_API_KEY set

Stop everything:  ./scripts/quickstart.sh --stop
EOT
exit "$status"
