#!/usr/bin/env bash
# Installs tools/openapi's pinned npm packages (npm ci); skipped when package-lock.json has not
# changed since the last install. Used by scripts/check-openapi.sh and check-openapi-client.sh.
set -euo pipefail
tools=$(cd "$(dirname "$0")" && pwd)
lock_sum=$(sha256sum "$tools/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$tools/node_modules/.fencelock-lock-sha256" 2>/dev/null || true)" != "$lock_sum" ]; then
  (cd "$tools" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  echo "$lock_sum" >"$tools/node_modules/.fencelock-lock-sha256"
fi
