#!/usr/bin/env bash
# A client generated from docs/openapi.yaml, as an API user would generate one, must compile and
# work: openapi-typescript writes the types, tools/openapi/generated-client/call.ts uses them with
# openapi-fetch under strict TypeScript (tsc), then runs against a live fencelockd
# (scripts/live-stack.sh: three redis-servers, fencelockd, PostgreSQL; ports N+1..N+20).
#   scripts/check-openapi-client.sh [--port-base N (17700)] [--fencelockd PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
port_base=17700
stack_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --port-base) port_base=$2; shift 2 ;;
    --fencelockd) stack_args+=(--fencelockd "$2"); shift 2 ;;
    *) echo "check-openapi-client.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

tools=$PWD/tools/openapi
client=$tools/generated-client
"$tools/install.sh"
rm -rf "$client/out" "$client/schema.d.ts"
"$tools/node_modules/.bin/openapi-typescript" docs/openapi.yaml --output "$client/schema.d.ts" \
  --silent
"$tools/node_modules/.bin/tsc" -p "$client"
echo "check-openapi-client: the generated client compiles (strict)"

stack=$(mktemp -d "${TMPDIR:-/tmp}/fencelock-openapi-client.XXXXXX")
trap 'scripts/live-stack.sh stop "$stack"' EXIT
scripts/live-stack.sh start "$stack" --port-base "$port_base" "${stack_args[@]}" >/dev/null
# shellcheck disable=SC1091  # written by live-stack.sh
. "$stack/env"
FENCELOCK_ENDPOINT=$FENCELOCK_ENDPOINT node "$client/out/call.js"
