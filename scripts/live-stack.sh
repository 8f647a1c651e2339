#!/usr/bin/env bash
# A throw-away stack for the client tests and the web-backend examples (issue #17): three
# redis-servers, one fencelockd (SQLite tokens) and one PostgreSQL 15 server, all on loopback, all
# in DIR. `start` waits until fencelockd answers /readyz and PostgreSQL accepts connections, then
# writes DIR/env (sourceable):
#   FENCELOCK_ENDPOINT=http://127.0.0.1:<base+10>
#   DATABASE_URL=postgresql://fencelock@127.0.0.1:<base+20>/fencelock
# and, for the clients' tests: FENCELOCK_STACK_DIR (DIR), FENCELOCK_REDIS_PORTS (the three lock
# nodes' ports, comma-separated), FENCELOCKD (the binary the stack runs) and
# FENCELOCK_SPARE_PORT_BASE (<base+50>: N+50..N+99 are free for a test's own servers).
# `stop` stops everything started in DIR (SIGTERM, then SIGKILL after 5 s) and removes DIR.
#
#   scripts/live-stack.sh start DIR [--port-base N] [--fencelockd PATH]
#   scripts/live-stack.sh stop DIR
#
# Ports: redis N+1..N+3, fencelockd N+10, PostgreSQL N+20 (N = 17600). PostgreSQL refuses to run
# as root: initdb and the server run as the `postgres` user the Debian package creates.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

usage() { sed -n '2,13p' "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
action=$1
dir=$2
shift 2
port_base=17600
fencelockd=$root/build/release/service/fencelockd
while [ $# -gt 0 ]; do
  case "$1" in
    --port-base) [ $# -ge 2 ] || usage; port_base=$2; shift ;;
    --fencelockd) [ $# -ge 2 ] || usage; fencelockd=$2; shift ;;
    *) usage ;;
  esac
  shift
done
pg_bin=/usr/lib/postgresql/15/bin

stop_stack() {
  [ -d "$dir" ] || return 0
  local pidfile pid
  for pidfile in "$dir"/*.pid; do
    [ -e "$pidfile" ] || continue
    pid=$(cat "$pidfile" 2>/dev/null || true)
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
  done
  for pidfile in "$dir"/*.pid; do
    [ -e "$pidfile" ] || continue
    pid=$(cat "$pidfile" 2>/dev/null || true)
    [ -n "$pid" ] || continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  local shm
  shm=$(cat "$dir/redis-data.path" 2>/dev/null || true)
  case "$shm" in /dev/shm/fencelock-stack.*) rm -rf "$shm" ;; esac
  rm -rf "$dir"
}

if [ "$action" = stop ]; then
  stop_stack
  exit 0
fi
[ "$action" = start ] || usage
[ -x "$fencelockd" ] || { echo "live-stack: no fencelockd at $fencelockd (build the release preset)" >&2; exit 2; }
fencelockd=$(cd "$(dirname "$fencelockd")" && pwd)/$(basename "$fencelockd")
[ -x "$pg_bin/initdb" ] || { echo "live-stack: PostgreSQL 15 is missing (scripts/install-deps.sh)" >&2; exit 2; }

stop_stack
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
trap 'status=$?; [ $status -eq 0 ] || stop_stack; exit $status' EXIT

# Each process in its own session, its pid in DIR/<name>.pid.
spawn() {
  local name=$1
  shift
  setsid "$@" >"$dir/$name.log" 2>&1 </dev/null &
  echo $! >"$dir/$name.pid"
}

# The lock nodes' files on tmpfs: still appendonly + appendfsync always (so fencelockd trusts them
# as durable), but an fsync there never waits on the disk, which a loaded CI machine (a Go build
# beside the tests) stalled for longer than the node timeout: renewals failed and acquires saw
# 2 of 3 nodes "unreachable". The clients' tests test the clients, not the disk.
redis_data=$(mktemp -d /dev/shm/fencelock-stack.XXXXXX 2>/dev/null || mktemp -d "$dir/redis-data.XXXXXX")
echo "$redis_data" >"$dir/redis-data.path"
redis_list=
for i in 1 2 3; do
  port=$((port_base + i))
  mkdir -p "$redis_data/redis-$i"
  spawn "redis-$i" redis-server --port "$port" --bind 127.0.0.1 --dir "$redis_data/redis-$i" \
    --save '' --appendonly yes --appendfsync always
  redis_list=${redis_list:+$redis_list,}127.0.0.1:$port
done

pg_port=$((port_base + 20))
mkdir -p "$dir/pg"
chown postgres:postgres "$dir/pg"
chmod 700 "$dir/pg"
# The run dir must be traversable by the postgres user.
chmod 755 "$dir"
runuser -u postgres -- "$pg_bin/initdb" -D "$dir/pg/data" -A trust -U fencelock >"$dir/initdb.log" 2>&1 ||
  { cat "$dir/initdb.log" >&2; exit 1; }
# setpriv, not runuser: the pid in postgres.pid is the server itself, which stops on SIGTERM.
setsid setpriv --reuid=postgres --regid=postgres --init-groups "$pg_bin/postgres" -D "$dir/pg/data" -p "$pg_port" -k "$dir/pg" \
  -c listen_addresses=127.0.0.1 -c fsync=off >"$dir/postgres.log" 2>&1 </dev/null &
echo $! >"$dir/postgres.pid"

listen=127.0.0.1:$((port_base + 10))
# A node timeout above the default 50 ms: a loaded CI machine otherwise sees brief 503s.
spawn fencelockd "$fencelockd" --listen "$listen" --redis "$redis_list" --tokens "sqlite:$dir/tokens.db" \
  --node-timeout 250ms

ready=0
for _ in $(seq 100); do
  if "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$pg_port" -U fencelock -d postgres &&
    curl -fs -m 1 "http://$listen/readyz" >/dev/null 2>&1; then
    ready=1
    break
  fi
  sleep 0.1
done
if [ "$ready" -ne 1 ]; then
  echo "live-stack: not ready after 10 s" >&2
  tail -n 5 "$dir"/*.log >&2
  exit 1
fi
"$pg_bin/psql" -q -h 127.0.0.1 -p "$pg_port" -U fencelock -d postgres \
  -c "CREATE DATABASE fencelock" >/dev/null
cat >"$dir/env" <<EOF
FENCELOCK_ENDPOINT=http://$listen
DATABASE_URL=postgresql://fencelock@127.0.0.1:$pg_port/fencelock
FENCELOCK_STACK_DIR=$(printf '%q' "$dir")
FENCELOCK_REDIS_PORTS=$((port_base + 1)),$((port_base + 2)),$((port_base + 3))
FENCELOCKD=$(printf '%q' "$fencelockd")
FENCELOCK_SPARE_PORT_BASE=$((port_base + 50))
EOF
echo "live-stack: ready in $dir"
cat "$dir/env"
