#!/usr/bin/env bash
# Tests the Node client (client-sdk/node) against a live stack: installs the locked dev
# dependencies (npm ci, offline from the cache after the first time), type-checks index.d.ts and
# postgres.d.ts, starts scripts/live-stack.sh (redis x3 + fencelockd + PostgreSQL 15), runs
# `node --test`, and always stops the stack. Exits non-zero on any failure.
#
#   client-sdk/node/test.sh [--port-base N] [--fencelockd PATH]
#
# Ports: the stack uses N+1..N+20 (N = 17800); the tests' own fencelockd and closed endpoints
# N+30..N+39. Needs the release build (cmake --preset release && cmake --build --preset release).
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd ../.. && pwd)
port_base=17800
fencelockd=$root/build/release/service/fencelockd
while [ $# -gt 0 ]; do
  case "$1" in
    --port-base) port_base=$2; shift ;;
    --fencelockd) fencelockd=$2; shift ;;
    *) sed -n '2,11p' "$0" >&2; exit 2 ;;
  esac
  shift
done
command -v node >/dev/null || { echo "node-test: no node on the PATH" >&2; exit 2; }
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)' ||
  { echo "node-test: Node >= 18 needed, found $(node --version)" >&2; exit 2; }

npm ci --prefer-offline --no-audit --no-fund --loglevel=error
npx --no-install tsc -p test/tsconfig.json

stack=$(mktemp -d /tmp/fencelock-node-stack.XXXXXX)
trap '"$root/scripts/live-stack.sh" stop "$stack"' EXIT
"$root/scripts/live-stack.sh" start "$stack" --port-base "$port_base" --fencelockd "$fencelockd" >/dev/null
set -a
# shellcheck disable=SC1091
. "$stack/env"
set +a
export FENCELOCK_SPARE_PORT_BASE=$((port_base + 30))

timeout 600 node --test --test-concurrency=1 --test-timeout=60000 test/
