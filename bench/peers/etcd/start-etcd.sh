#!/usr/bin/env bash
# Starts one local etcd member for the peer benchmark, in the background, on loopback only, with
# etcd's defaults (fsync on every commit). Installs etcd-server (Debian 12: 3.4.23) if missing.
#
#   start-etcd.sh DATA_DIR [CLIENT_PORT [PEER_PORT]]      (defaults 12379, 12380)
#
# Writes DATA_DIR/etcd.pid and DATA_DIR/etcd.log, waits until GET /health answers healthy (30 s at
# most) and exits 0. If the etcd recorded in DATA_DIR/etcd.pid is already running and healthy, it
# does nothing. It refuses to start when something else already listens on CLIENT_PORT, so a
# system etcd (Debian's package may enable one on 2379) can never be what gets benchmarked.
# Stop it with stop-etcd.sh DATA_DIR.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 3 ]; then
  echo "usage: $0 DATA_DIR [CLIENT_PORT [PEER_PORT]]" >&2
  exit 2
fi
data_dir=$1
client_port=${2:-12379}
peer_port=${3:-12380}
here=$(cd "$(dirname "$0")" && pwd)

# Quiet, idempotent install. The package's postinst may try to start (and systemd may enable) a
# system etcd on 2379/2380; we never use those ports, and we do not touch that service.
if ! command -v etcd >/dev/null 2>&1; then
  echo "start-etcd: installing etcd-server" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq etcd-server >/dev/null 2>&1 || {
    DEBIAN_FRONTEND=noninteractive $sudo apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq etcd-server >/dev/null
  }
fi

# health PORT: prints the body of GET /health (pure bash, so no curl needed).
health() {
  local body
  body=$({ exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null &&
    printf 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 &&
    timeout 2 cat <&3) || return 1
  printf '%s' "$body" | grep -q '"health":"true"'
}
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

mkdir -p "$data_dir"
data_dir=$(cd "$data_dir" && pwd)
pid_file=$data_dir/etcd.pid

if [ -f "$pid_file" ] && "$here/stop-etcd.sh" --is-running "$data_dir"; then
  if health "$client_port"; then
    echo "start-etcd: already running (pid $(cat "$pid_file"))" >&2
    exit 0
  fi
  echo "start-etcd: etcd pid $(cat "$pid_file") is running but 127.0.0.1:$client_port is not healthy" >&2
  exit 1
fi
rm -f "$pid_file"
for p in "$client_port" "$peer_port"; do
  if port_in_use "$p"; then
    echo "start-etcd: 127.0.0.1:$p is already in use by another process; refusing to start" >&2
    exit 1
  fi
done

# ETCD_* variables would shadow or conflict with our flags (etcd 3.4 refuses conflicts).
while read -r v; do unset "$v"; done < <(compgen -e | grep '^ETCD_' || true)

# No --unsafe-no-fsync, no --snapshot-count etc.: etcd's defaults, like a production member.
setsid etcd \
  --name default \
  --data-dir "$data_dir" \
  --listen-client-urls "http://127.0.0.1:$client_port" \
  --advertise-client-urls "http://127.0.0.1:$client_port" \
  --listen-peer-urls "http://127.0.0.1:$peer_port" \
  --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
  --initial-cluster "default=http://127.0.0.1:$peer_port" \
  --logger zap --log-outputs stderr \
  </dev/null >>"$data_dir/etcd.log" 2>&1 &
pid=$!
echo "$pid" >"$pid_file"

for _ in $(seq 1 300); do
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "start-etcd: etcd exited during startup; last lines of $data_dir/etcd.log:" >&2
    tail -n 20 "$data_dir/etcd.log" >&2
    rm -f "$pid_file"
    exit 1
  fi
  if health "$client_port"; then
    echo "start-etcd: etcd $(etcd --version | sed -n 's/^etcd Version: //p') pid $pid on 127.0.0.1:$client_port (data $data_dir)" >&2
    exit 0
  fi
  sleep 0.1
done
echo "start-etcd: no healthy answer on 127.0.0.1:$client_port after 30 s; stopping pid $pid" >&2
"$here/stop-etcd.sh" "$data_dir" || true
exit 1
