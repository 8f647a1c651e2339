#!/usr/bin/env bash
# fencelock in one command: installs what is missing, builds, starts five local Redis masters
# (appendonly, fsync always), fencelockd (SQLite tokens) and two resource stores (one fenced, one
# not), waits until fencelockd is ready, runs the Kleppmann demo and prints what to try next.
# Everything keeps running in the run directory; `--stop` stops it. Running it again restarts it.
#
#   ./scripts/quickstart.sh [--cluster] [--postgres] [--stop] [--preset release|asan] [--run-dir DIR]
#                           [--port-base N]
#
# Ports: Redis N+1..N+5, fencelockd N+80, fenced store N+90, unfenced store N+91 (N = 7000).
# --cluster: no single point of failure — 3 etcd members (clients N+21..N+23, peers N+31..N+33)
# for the tokens, 3 fencelockd (N+81..N+83) and HAProxy on N+80 in front; the demo runs through
# HAProxy while the etcd leader and one fencelockd are SIGKILLed, then both are started again.
# --postgres: the fenced store keeps its objects in PostgreSQL 15 (a server of its own in
# DIR/pg on N+95, run as the `postgres` user when started as root — under /tmp when that user
# cannot traverse DIR, e.g. a clone in /root; --stop stops it and removes that directory).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

preset=release
run_dir=$root/run
port_base=${FENCELOCK_QUICKSTART_PORT_BASE:-7000}
stop_only=0
cluster=0
postgres=0
needs_value() { [ $# -ge 2 ] || { echo "quickstart: $1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --stop) stop_only=1 ;;
    --cluster) cluster=1 ;;
    --preset) needs_value "$@"; preset=$2; shift ;;
    --run-dir) needs_value "$@"; run_dir=$2; shift ;;
    --port-base) needs_value "$@"; port_base=$2; shift ;;
    --postgres) postgres=1 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "quickstart: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
if ! [[ "$port_base" =~ ^[0-9]+$ ]] || [ "$port_base" -lt 1024 ] || [ "$port_base" -gt 65000 ]; then
  echo "quickstart: --port-base must be a number from 1024 to 65000, not '$port_base'" >&2
  exit 2
fi

stop_all() {
  [ -d "$run_dir" ] || return 0
  local pidfile pid
  for pidfile in "$run_dir"/haproxy.pid "$run_dir"/*.pid; do  # the load balancer first
    [ -e "$pidfile" ] || continue
    pid=$(cat "$pidfile" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      # PostgreSQL's SIGTERM waits for its clients to leave; SIGINT (fast shutdown) ends them.
      if [ "$(basename "$pidfile")" = postgres.pid ]; then
        kill -INT "$pid" 2>/dev/null || true
      else
        kill -TERM "$pid" 2>/dev/null || true
      fi
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
  done
  # PostgreSQL's directory outside the run dir (start_postgres), once its server has stopped.
  if [ -f "$run_dir/pg.path" ]; then
    local pg_path
    pg_path=$(cat "$run_dir/pg.path")
    case "$pg_path" in /tmp/fencelock-quickstart-pg.*) rm -rf "$pg_path" ;; esac
    rm -f "$run_dir/pg.path"
  fi
}

# ---- --postgres: the fenced store's PostgreSQL ---------------------------------------------------
postgres_port=$((port_base + 95))
start_postgres() {
  local pg_bin=/usr/lib/postgresql/15/bin as_pg=() pg_dir=$run_dir/pg
  [ -x "$pg_bin/postgres" ] || { echo "quickstart: PostgreSQL 15 is missing (scripts/install-deps.sh)" >&2; exit 2; }
  if [ "$(id -u)" = 0 ]; then  # initdb and the server refuse to run as root
    # setpriv execs the server: the pid in postgres.pid is the postmaster itself.
    as_pg=(setpriv --reuid=postgres --regid=postgres --init-groups)
    if ! "${as_pg[@]}" test -x "$run_dir"; then
      # A checkout the postgres user cannot traverse (/root is mode 700, so is a mktemp -d
      # folder): the server's directory goes under /tmp, noted in pg.path, removed by --stop.
      pg_dir=$(mktemp -d /tmp/fencelock-quickstart-pg.XXXXXX)
      chmod 755 "$pg_dir"
      echo "$pg_dir" >"$run_dir/pg.path"
      pg_dir=$pg_dir/pg
    fi
  fi
  mkdir -p "$pg_dir"
  chmod 700 "$pg_dir"
  [ "$(id -u)" != 0 ] || chown postgres:postgres "$pg_dir"
  "${as_pg[@]}" "$pg_bin/initdb" -D "$pg_dir/data" -A trust -U fencelock >"$run_dir/initdb.log" 2>&1 ||
    { tail -n 20 "$run_dir/initdb.log" >&2; exit 1; }
  nohup "${as_pg[@]}" "$pg_bin/postgres" -D "$pg_dir/data" -p "$postgres_port" -k "$pg_dir" \
    -c listen_addresses=127.0.0.1 >"$run_dir/postgres.log" 2>&1 &
  echo $! >"$run_dir/postgres.pid"
  disown
  for _ in $(seq 300); do
    "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$postgres_port" -U fencelock -d postgres && break
    sleep 0.1
  done
  "$pg_bin/psql" -q -h 127.0.0.1 -p "$postgres_port" -U fencelock -d postgres \
    -c "CREATE DATABASE store_fenced" >/dev/null ||
    { echo "quickstart: PostgreSQL did not start; see $run_dir/postgres.log" >&2; tail -n 20 "$run_dir/postgres.log" >&2; exit 1; }
  fenced_db="postgresql://fencelock@127.0.0.1:$postgres_port/store_fenced"
}

# ---- --cluster: 3 etcd members, 3 fencelockd on etcd tokens, HAProxy in front ----------------

etcd_client_port() { echo $((port_base + 20 + $1)); }
etcd_peer_port() { echo $((port_base + 30 + $1)); }
member_port() { echo $((port_base + 80 + $1)); }

start_etcd() {  # member 1..3; with its data dir in place it rejoins the cluster
  local i=$1 initial="" j
  for j in 1 2 3; do initial="$initial${initial:+,}e$j=http://127.0.0.1:$(etcd_peer_port "$j")"; done
  start "etcd-$i" etcd --name "e$i" --data-dir "$run_dir/etcd-$i" \
    --listen-client-urls "http://127.0.0.1:$(etcd_client_port "$i")" \
    --advertise-client-urls "http://127.0.0.1:$(etcd_client_port "$i")" \
    --listen-peer-urls "http://127.0.0.1:$(etcd_peer_port "$i")" \
    --initial-advertise-peer-urls "http://127.0.0.1:$(etcd_peer_port "$i")" \
    --initial-cluster "$initial" --initial-cluster-state new \
    --initial-cluster-token "fencelock-quickstart-$port_base" \
    --auto-compaction-mode revision --auto-compaction-retention 10000 \
    --logger zap --log-level warn
}

start_member() {  # fencelockd 1..3; every HAProxy connection comes from one address
  local i=$1 endpoints="" j
  for j in 1 2 3; do endpoints="$endpoints${endpoints:+,}127.0.0.1:$(etcd_client_port "$j")"; done
  start "fencelockd-$i" "$bin/service/fencelockd" --listen "127.0.0.1:$(member_port "$i")" \
    --redis "$nodes" --tokens "etcd://$endpoints" --token-timeout 1s \
    --max-connections-per-client 10000
}

# The member (1..3) that leads the etcd cluster now, as the members' JSON gateway reports it:
# `leader` of any member's status equals `header.member_id` of the leader's own. Empty if none.
etcd_leader() {
  local i status leader="" ids=()
  for i in 1 2 3; do
    status=$(curl -s -m 1 -X POST "http://127.0.0.1:$(etcd_client_port "$i")/v3/maintenance/status" \
      -d '{}' 2>/dev/null || true)
    ids[i]=$(sed -n 's/.*"member_id":"\([0-9]*\)".*/\1/p' <<<"$status")
    [ -n "$leader" ] || leader=$(sed -n 's/.*"leader":"\([0-9]*\)".*/\1/p' <<<"$status")
  done
  [ -n "$leader" ] || return 0
  for i in 1 2 3; do [ "${ids[i]}" = "$leader" ] && echo "$i"; done
  return 0
}

wait_until() {  # tenths of a second, command...: true once the command succeeds
  local tenths=$1; shift
  for _ in $(seq "$tenths"); do "$@" && return 0; sleep 0.1; done
  return 1
}
etcd_healthy() { curl -fs -m 1 "http://127.0.0.1:$(etcd_client_port "$1")/health" 2>/dev/null | grep -q '"health":"true"'; }
member_ready() { curl -fs -m 1 "http://127.0.0.1:$(member_port "$1")/readyz" >/dev/null 2>&1; }
all_ready() {
  local i
  for i in 1 2 3; do member_ready "$i" || return 1; done
  curl -fs -m 1 "http://127.0.0.1:$front_port/readyz" >/dev/null 2>&1 &&
    curl -fs -m 1 "http://127.0.0.1:$fenced_port/healthz" >/dev/null 2>&1 &&
    curl -fs -m 1 "http://127.0.0.1:$unfenced_port/healthz" >/dev/null 2>&1
}

write_haproxy_config() {  # the same settings as deploy/haproxy.cfg, on loopback
  cat >"$run_dir/haproxy.cfg" <<CFG
global
  maxconn 4096

defaults
  mode http
  timeout connect 1s
  timeout client 70s
  # Above fencelockd's --max-wait (60 s): a waiting acquire is answered when it gets the lock.
  timeout server 70s
  # A connection refused by a dead instance is retried on another one; an answer is never retried.
  retries 3
  option redispatch

frontend fencelock
  bind 127.0.0.1:$front_port
  default_backend fencelockd

backend fencelockd
  balance roundrobin
  option httpchk
  http-check send meth GET uri /readyz
  http-check expect status 200
  default-server inter 500ms fall 2 rise 2
  server fencelockd-1 127.0.0.1:$(member_port 1) check
  server fencelockd-2 127.0.0.1:$(member_port 2) check
  server fencelockd-3 127.0.0.1:$(member_port 3) check
CFG
}

# Acquire and release `cluster-probe` through HAProxy, one after another, until $run_dir/probe.stop
# appears (at most 60 s, 5000 rounds): each grant starts after the previous one ended, so its token
# must be above every earlier one. Tokens go to probe.tokens, failed attempts to probe.failures.
probe_loop() {
  local answer code token lease rounds=0 deadline=$((SECONDS + 60))
  : >"$run_dir/probe.tokens"
  : >"$run_dir/probe.failures"
  while [ ! -e "$run_dir/probe.stop" ] && [ $SECONDS -lt $deadline ] && [ $rounds -lt 5000 ]; do
    rounds=$((rounds + 1))
    answer=$(curl -s -m 5 -w ' %{http_code}' -X POST "http://127.0.0.1:$front_port/v1/locks/cluster-probe" \
      -H 'Content-Type: application/json' -d '{"ttl_ms": 1000, "wait_ms": 2000}' 2>/dev/null || true)
    code=${answer##* }
    token=$(sed -n 's/.*"token":\([0-9]*\).*/\1/p' <<<"$answer")
    if [ "$code" = 200 ] && [ -n "$token" ]; then
      echo "$token" >>"$run_dir/probe.tokens"
      lease=$(sed -n 's/.*"lease":"\([^"]*\)".*/\1/p' <<<"$answer")
      curl -s -m 5 -X DELETE "http://127.0.0.1:$front_port/v1/locks/cluster-probe" \
        -H 'Content-Type: application/json' -d "{\"lease\": \"$lease\"}" >/dev/null 2>&1 || true
    else
      echo "${code:-000}" >>"$run_dir/probe.failures"
      sleep 0.05
    fi
  done
}

since() { awk -v s="$1" -v n="$(date +%s.%N)" 'BEGIN { printf "t=%5.2fs", n - s }'; }

cluster_quickstart() {
  front_port=$((port_base + 80))
  local i endpoints=""
  for i in 1 2 3; do start_etcd "$i"; done
  for i in 1 2 3; do endpoints="$endpoints${endpoints:+ }127.0.0.1:$(etcd_client_port "$i")"; done
  echo -n "quickstart: waiting for the etcd cluster to elect a leader"
  if ! wait_until 300 etcd_healthy 1; then
    echo
    echo "quickstart: etcd did not become healthy; see $run_dir/etcd-1.log" >&2
    tail -n 20 "$run_dir/etcd-1.log" >&2 || true
    exit 1
  fi
  echo
  for i in 1 2 3; do start_member "$i"; done
  write_haproxy_config
  start haproxy haproxy -db -f "$run_dir/haproxy.cfg"
  start store-fenced "$bin/examples/resource-store" --listen "127.0.0.1:$fenced_port" \
    --db "$fenced_db" --log "$run_dir/store-fenced.ops.log" --mode fenced
  start store-unfenced "$bin/examples/resource-store" --listen "127.0.0.1:$unfenced_port" \
    --db "$run_dir/store-unfenced.db" --log "$run_dir/store-unfenced.ops.log" --mode unfenced
  echo -n "quickstart: waiting for three fencelockd and HAProxy to be ready"
  if ! wait_until 300 all_ready; then
    echo
    echo "quickstart: the cluster did not become ready; logs in $run_dir:" >&2
    for i in 1 2 3; do member_ready "$i" || tail -n 5 "$run_dir/fencelockd-$i.log" >&2 || true; done
    tail -n 5 "$run_dir/haproxy.log" >&2 || true
    exit 1
  fi
  echo

  echo "quickstart: the Kleppmann demo through HAProxy (127.0.0.1:$front_port); while client 1 of"
  echo "the fenced run is paused, the etcd leader and the fencelockd that granted its lease are killed"
  rm -f "$run_dir/probe.stop"
  probe_loop &
  local probe_pid=$! started
  started=$(date +%s.%N)
  "$bin/examples/kleppmann-demo" --fencelock "http://127.0.0.1:$front_port" \
    --fenced-store "http://127.0.0.1:$fenced_port" --unfenced-store "http://127.0.0.1:$unfenced_port" \
    >"$run_dir/demo.out" 2>&1 &
  local demo_pid=$! status=0 granted="" leader="" victim="" token=""
  # The fenced run has begun once its header is out; client 1's grant shows in one instance's log.
  wait_until 300 grep -q '=== fenced store' "$run_dir/demo.out" || true
  for _ in $(seq 100); do
    granted=$(grep -l 'route=acquire name=kleppmann-fenced-[^ ]* status=200' "$run_dir"/fencelockd-?.log 2>/dev/null | head -n 1 || true)
    [ -n "$granted" ] && break
    sleep 0.05
  done
  leader=$(etcd_leader)
  if [ -z "$granted" ] || [ -z "$leader" ]; then
    echo "quickstart: could not find client 1's grant or the etcd leader; nothing was killed" >&2
    status=1
  else
    victim=$(sed 's/.*fencelockd-\([0-9]\)\.log/\1/' <<<"$granted")
    token=$(grep -o 'route=acquire name=kleppmann-fenced-[^ ]* status=200 .*token=[0-9]*' "$granted" |
      sed 's/.*token=\([0-9]*\).*/\1/' | head -n 1)
    kill -KILL "$(cat "$run_dir/etcd-$leader.pid")" 2>/dev/null || true
    local kill_etcd kill_member
    kill_etcd="  $(since "$started")  SIGKILL etcd member e$leader, the leader (127.0.0.1:$(etcd_client_port "$leader"))"
    kill -KILL "$(cat "$run_dir/fencelockd-$victim.pid")" 2>/dev/null || true
    kill_member="  $(since "$started")  SIGKILL fencelockd-$victim (127.0.0.1:$(member_port "$victim")), which granted that lease"
  fi
  wait "$demo_pid" || status=$?
  touch "$run_dir/probe.stop"
  wait "$probe_pid" || true
  cat "$run_dir/demo.out"
  echo
  if [ -n "$victim" ]; then
    echo "While client 1 of the fenced run was paused (its lease: token ${token:-?}), since the demo began:"
    printf '%s\n%s\n' "$kill_etcd" "$kill_member"
  fi

  # No token repeated: the probe's grants were sequential, so each must be above the one before.
  local grants failures
  grants=$(wc -l <"$run_dir/probe.tokens")
  failures=$(wc -l <"$run_dir/probe.failures")
  if [ "$grants" -lt 1 ]; then
    echo "TOKENS BAD: the probe got no grant through HAProxy" >&2
    status=1
  elif ! awk 'NR > 1 && $1 <= last { print "token " $1 " after " last; bad = 1 } { last = $1 } END { exit bad }' \
      "$run_dir/probe.tokens" >&2; then
    echo "TOKENS BAD: a token of cluster-probe repeated or went back ($run_dir/probe.tokens)" >&2
    status=1
  else
    echo "TOKENS OK: $grants grants of cluster-probe through HAProxy meanwhile, each token above the one before" \
      "($(head -n 1 "$run_dir/probe.tokens") .. $(tail -n 1 "$run_dir/probe.tokens")); refused or cut off during the kills: $failures"
  fi

  if [ -n "$victim" ]; then
    echo "quickstart: starting e$leader and fencelockd-$victim again (logs before the kill: *.killed.log)"
    mv "$run_dir/etcd-$leader.log" "$run_dir/etcd-$leader.killed.log"
    mv "$run_dir/fencelockd-$victim.log" "$run_dir/fencelockd-$victim.killed.log"
    start_etcd "$leader"
    start_member "$victim"
    wait_until 300 etcd_healthy "$leader" || { echo "quickstart: e$leader did not rejoin; see $run_dir/etcd-$leader.log" >&2; status=1; }
    wait_until 300 all_ready || { echo "quickstart: fencelockd-$victim is not ready; see $run_dir/fencelockd-$victim.log" >&2; status=1; }
  fi

  cat <<EOT

fencelock is running as a cluster (logs and data in $run_dir):
  HAProxy           http://127.0.0.1:$front_port   (round robin over the three; checks /readyz)
  fencelockd        $(for i in 1 2 3; do echo -n "http://127.0.0.1:$(member_port "$i")  "; done)
  etcd members      $endpoints
  fenced store      http://127.0.0.1:$fenced_port   (objects in $fenced_db)
  unfenced store    http://127.0.0.1:$unfenced_port
  Redis lock nodes  $nodes

Try:
  curl -s -X POST 127.0.0.1:$front_port/v1/locks/invoice-42 -H 'Content-Type: application/json' -d '{"ttl_ms": 30000}'
  kill -KILL \$(cat $run_dir/fencelockd-1.pid); curl -s -X POST 127.0.0.1:$front_port/v1/tokens/invoice-42
  curl -s -X POST 127.0.0.1:$(etcd_client_port 1)/v3/maintenance/status -d '{}'

Stop everything:  ./scripts/quickstart.sh --stop$([ "$run_dir" = "$root/run" ] || echo " --run-dir $run_dir")
EOT
  exit "$status"
}

if [ "$stop_only" = 1 ]; then
  stop_all
  echo "quickstart: stopped everything in $run_dir"
  exit 0
fi

if [ "$cluster" = 1 ]; then scripts/install-deps.sh haproxy; else scripts/install-deps.sh; fi
# Only what it runs (the whole tree, tests included, took 7 min on a fresh 2-core machine).
echo "quickstart: building fencelockd, the fencelock CLI and the demo ($preset; a few minutes the first time)…"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)" --target fencelockd fencelock resource-store \
  kleppmann-demo >/dev/null
bin=$root/build/$preset

stop_all  # a second run starts from a clean slate
mkdir -p "$run_dir"
rm -rf "$run_dir"/redis-* "$run_dir"/*.db* "$run_dir"/*.log "$run_dir"/etcd-* "$run_dir"/probe.* \
  "$run_dir"/demo.out "$run_dir"/haproxy.cfg "$run_dir"/pg
fenced_db=$run_dir/store-fenced.db
[ "$postgres" = 1 ] && start_postgres

fencelockd_port=$((port_base + 80))
fenced_port=$((port_base + 90))
unfenced_port=$((port_base + 91))
nodes=""
echo "quickstart: starting 5 Redis lock nodes on 127.0.0.1:$((port_base + 1))..$((port_base + 5)) (--port-base moves every port)"
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
  disown  # --cluster kills some of them: no job-control notices
}
[ "$cluster" = 1 ] && cluster_quickstart  # exits
start fencelockd "$bin/service/fencelockd" --listen "127.0.0.1:$fencelockd_port" --redis "$nodes" \
  --tokens "sqlite:$run_dir/tokens.db"
start store-fenced "$bin/examples/resource-store" --listen "127.0.0.1:$fenced_port" \
  --db "$fenced_db" --log "$run_dir/store-fenced.ops.log" --mode fenced
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
  fenced store      http://127.0.0.1:$fenced_port   (objects in $fenced_db)
  unfenced store    http://127.0.0.1:$unfenced_port
  Redis lock nodes  $nodes

Try:
  curl -s -X POST 127.0.0.1:$fencelockd_port/v1/locks/invoice-42 -H 'Content-Type: application/json' -d '{"ttl_ms": 30000}'
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
