#!/usr/bin/env bash
# Redlock peer benchmark launcher (node-redlock, @sesamecare-oss/redlock, redlock-universal).
#
#   bench/peers/redlock/run.sh INSTALL_DIR -- <bench.js args>
#   e.g. bench/peers/redlock/run.sh build/bench/redlock -- --library sesamecare-redlock \
#          --redis 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003,127.0.0.1:7004,127.0.0.1:7005 \
#          --workload uncontended --callers 64 --seconds 5
#
# 1. Installs the pinned dependencies (redlock 5.0.0-beta.2, @sesamecare-oss/redlock,
#    redlock-universal, ioredis 5; exact versions in package-lock.json) into
#    INSTALL_DIR with `npm ci` from this folder's package.json + package-lock.json
#    (copied there), so nothing is written next to the sources. Idempotent: when
#    INSTALL_DIR already holds an install of this exact lockfile, npm is not run
#    at all (works offline). Uses the npm registry npm is configured with, with
#    --ignore-scripts (no install scripts run) and --prefer-offline. npm's own
#    output goes to stderr.
# 2. Runs bench.js (from this folder) with NODE_PATH=INSTALL_DIR/node_modules.
#    stdout carries only bench.js's single JSON result line; its exit code is
#    bench.js's.
#
# Needs node >= 16 and npm. Concurrent runs sharing an INSTALL_DIR are
# serialised around the install step with flock when it is available.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [ $# -lt 1 ] || [ -z "$1" ] || [ "$1" = "--" ]; then
  echo "usage: $0 INSTALL_DIR -- <bench.js args>" >&2
  exit 2
fi
install_dir=$1
shift
if [ "${1:-}" = "--" ]; then shift; fi

mkdir -p "$install_dir"
install_dir=$(cd "$install_dir" && pwd)

installed() {
  cmp -s "$here/package-lock.json" "$install_dir/package-lock.json" &&
    cmp -s "$here/package.json" "$install_dir/package.json" &&
    [ -f "$install_dir/node_modules/.package-lock.json" ] &&
    [ -f "$install_dir/node_modules/redlock/package.json" ] &&
    [ -f "$install_dir/node_modules/@sesamecare-oss/redlock/package.json" ] &&
    [ -f "$install_dir/node_modules/redlock-universal/package.json" ] &&
    [ -f "$install_dir/node_modules/ioredis/package.json" ]
}

do_install() {
  if installed; then return 0; fi
  cp "$here/package.json" "$here/package-lock.json" "$install_dir/"
  echo "run.sh: npm ci into $install_dir" >&2
  (cd "$install_dir" && npm ci --ignore-scripts --prefer-offline --no-audit --no-fund \
      --loglevel=error) >&2
}

if command -v flock >/dev/null 2>&1; then
  exec 9>"$install_dir/.install.lock"
  flock 9
  do_install
  flock -u 9
  exec 9>&-
else
  do_install
fi

export NODE_PATH="$install_dir/node_modules${NODE_PATH:+:$NODE_PATH}"
exec node "$here/bench.js" "$@"
