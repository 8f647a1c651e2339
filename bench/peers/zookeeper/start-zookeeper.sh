#!/usr/bin/env bash
# Starts a local ZooKeeper for the peer benchmark, in the background, on loopback only: one server
# (standalone), or a 3-server ensemble. Debian 12's ZooKeeper 3.8 with its defaults (a synced
# transaction log write per commit, like etcd's fsync), except: no AdminServer (it would take port
# 8080), no per-address connection cap (every caller connects from 127.0.0.1; the default 60 is
# below 64 callers), only the `srvr` four-letter word. Installs Debian's `zookeeper` package if it
# is missing: the server jar and scripts only. `zookeeperd` (the system service, on 2181) is
# neither needed nor touched, and this script refuses any port already in use, so a system
# ZooKeeper can never be what gets benchmarked.
#
#   start-zookeeper.sh DATA_DIR FIRST_PORT [SERVERS]      SERVERS: 1 (default) or 3
#
# Ports: 1 server: FIRST_PORT (client). 3 servers: FIRST_PORT .. +2 (clients), +3 .. +5 (quorum),
# +6 .. +8 (leader election). Each server lives in DATA_DIR/server-K/ (zoo.cfg, myid, data,
# zookeeper.pid, zookeeper.log). Waits (60 s at most) until every server answers `srvr` as
# standalone, leader or follower, prints the connection string (127.0.0.1:P[,…]) on stdout and
# exits 0; if the servers recorded in DATA_DIR are already running and serving, prints it and does
# nothing else. Stop with stop-zookeeper.sh DATA_DIR.
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ] || { [ $# -eq 3 ] && [ "$3" != 1 ] && [ "$3" != 3 ]; }; then
  echo "usage: $0 DATA_DIR FIRST_PORT [1|3]" >&2
  exit 2
fi
data_dir=$1
first_port=$2
servers=${3:-1}
here=$(cd "$(dirname "$0")" && pwd)
jar=/usr/share/java/zookeeper.jar

# Quiet, idempotent install of the server alone (no system service).
if [ ! -r "$jar" ] || ! command -v java >/dev/null 2>&1; then
  echo "start-zookeeper: installing zookeeper" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq zookeeper >/dev/null 2>&1 || {
    DEBIAN_FRONTEND=noninteractive $sudo apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq zookeeper >/dev/null
  }
fi

# mode PORT: the Mode line of `srvr` (standalone, leader, follower), pure bash.
mode() {
  local body
  body=$({ exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null && printf srvr >&3 && timeout 2 cat <&3) || return 1
  printf '%s\n' "$body" | sed -n 's/^Mode: //p'
}
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

mkdir -p "$data_dir"
data_dir=$(cd "$data_dir" && pwd)
client_ports=$(seq "$first_port" $((first_port + servers - 1)))
connect=$(for p in $client_ports; do printf '127.0.0.1:%s\n' "$p"; done | paste -sd,)
serving() {
  local p m
  for p in $client_ports; do
    m=$(mode "$p") || return 1
    case $m in standalone | leader | follower) ;; *) return 1 ;; esac
  done
}

if "$here/stop-zookeeper.sh" --is-running "$data_dir"; then
  if serving; then
    echo "start-zookeeper: already running" >&2
    echo "$connect"
    exit 0
  fi
  echo "start-zookeeper: the servers of $data_dir are running but not serving on $connect" >&2
  exit 1
fi
ports=$client_ports
[ "$servers" = 3 ] && ports=$(seq "$first_port" $((first_port + 8)))
for p in $ports; do
  if port_in_use "$p"; then
    echo "start-zookeeper: 127.0.0.1:$p is already in use by another process; refusing to start" >&2
    exit 1
  fi
done

# slf4j-simple at warn: the server logs only what went wrong, to zookeeper.log.
classpath=$jar:/usr/share/java/slf4j-simple.jar
for k in $(seq 1 "$servers"); do
  dir=$data_dir/server-$k
  rm -rf "$dir"
  mkdir -p "$dir/data"
  echo "$k" >"$dir/data/myid"
  {
    echo "tickTime=2000"
    echo "initLimit=10"
    echo "syncLimit=5"
    echo "dataDir=$dir/data"
    echo "clientPort=$((first_port + k - 1))"
    echo "clientPortAddress=127.0.0.1"
    echo "maxClientCnxns=0"
    echo "admin.enableServer=false"
    echo "4lw.commands.whitelist=srvr"
    if [ "$servers" = 3 ]; then
      for j in 1 2 3; do echo "server.$j=127.0.0.1:$((first_port + 2 + j)):$((first_port + 5 + j))"; done
    fi
  } >"$dir/zoo.cfg"
  # The heap is capped so that four servers (one standalone, an ensemble) fit beside everything else.
  setsid java -Xmx256m -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$classpath" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" </dev/null >>"$dir/zookeeper.log" 2>&1 &
  echo $! >"$dir/zookeeper.pid"
done

for _ in $(seq 1 600); do
  for k in $(seq 1 "$servers"); do
    if ! kill -0 "$(cat "$data_dir/server-$k/zookeeper.pid")" 2>/dev/null; then
      echo "start-zookeeper: server $k exited during startup; last lines of its log:" >&2
      tail -n 20 "$data_dir/server-$k/zookeeper.log" >&2
      "$here/stop-zookeeper.sh" "$data_dir" || true
      exit 1
    fi
  done
  if serving; then
    version=$({ exec 3<>"/dev/tcp/127.0.0.1/$first_port"; } 2>/dev/null && printf srvr >&3 && timeout 2 cat <&3 |
      sed -n 's/^Zookeeper version: \([^-,]*\).*/\1/p') || true
    echo "start-zookeeper: ZooKeeper ${version:-?}, $servers server(s) on $connect (data $data_dir)" >&2
    echo "$connect"
    exit 0
  fi
  sleep 0.1
done
echo "start-zookeeper: $connect not serving after 60 s; stopping" >&2
"$here/stop-zookeeper.sh" "$data_dir" || true
exit 1
