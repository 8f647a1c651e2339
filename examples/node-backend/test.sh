#!/usr/bin/env bash
# CI check of examples/node-backend: installs the client's and the example's locked dependencies,
# starts scripts/live-stack.sh, runs check.mjs (server.js on port N+50, concurrent deposits, a
# stale write refused), and always stops the stack. Exits non-zero on failure.
#
#   examples/node-backend/test.sh [--port-base N] [--fencelockd PATH]     (N = 17800)
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd ../.. && pwd)
port_base=17800
fencelockd=$root/build/release/service/fencelockd
while [ $# -gt 0 ]; do
  case "$1" in
    --port-base) port_base=$2; shift ;;
    --fencelockd) fencelockd=$2; shift ;;
    *) sed -n '2,7p' "$0" >&2; exit 2 ;;
  esac
  shift
done
# The client is linked (file:), and its postgres helper resolves `pg` from its own folder.
(cd "$root/client-sdk/node" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error)
npm ci --prefer-offline --no-audit --no-fund --loglevel=error

stack=$(mktemp -d /tmp/fencelock-node-example.XXXXXX)
trap '"$root/scripts/live-stack.sh" stop "$stack"' EXIT
"$root/scripts/live-stack.sh" start "$stack" --port-base "$port_base" --fencelockd "$fencelockd" >/dev/null
set -a
# shellcheck disable=SC1091
. "$stack/env"
set +a
EXAMPLE_PORT=$((port_base + 50)) timeout 300 node check.mjs
