#!/usr/bin/env bash
# One etcd benchmark run: starts the local etcd for DATA_DIR if it is not already running, runs
# bench.js with the given arguments (its one JSON line goes to stdout), and leaves etcd running so
# that several runs share one server. Stop it afterwards with: stop-etcd.sh DATA_DIR [--rm]
#
#   run.sh DATA_DIR -- <bench.js args>
#   e.g. run.sh /tmp/etcd-bench -- --workload contended --callers 16 --seconds 3
#
# The client port comes from the --endpoint argument if given (it must be http://127.0.0.1:PORT),
# otherwise from $CLIENT_PORT (default 12379), and --endpoint is added. The peer port is
# $PEER_PORT (default client port + 1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if [ $# -lt 2 ] || [ "$2" != "--" ]; then
  echo "usage: $0 DATA_DIR -- <bench.js args>" >&2
  exit 2
fi
data_dir=$1
shift 2
args=("$@")

client_port=${CLIENT_PORT:-12379}
have_endpoint=0
for ((i = 0; i < ${#args[@]}; i++)); do
  if [ "${args[$i]}" = "--endpoint" ] && [ $((i + 1)) -lt ${#args[@]} ]; then
    have_endpoint=1
    ep=${args[$((i + 1))]}
    if [[ "$ep" =~ ^http://127\.0\.0\.1:([0-9]+)/?$ ]]; then
      client_port=${BASH_REMATCH[1]}
    else
      echo "run.sh: --endpoint must be http://127.0.0.1:PORT (this script starts a local etcd)" >&2
      exit 2
    fi
  fi
done
peer_port=${PEER_PORT:-$((client_port + 1))}
[ "$have_endpoint" -eq 1 ] || args=(--endpoint "http://127.0.0.1:$client_port" "${args[@]}")

"$here/start-etcd.sh" "$data_dir" "$client_port" "$peer_port"
exec node "$here/bench.js" "${args[@]}"
