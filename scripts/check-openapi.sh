#!/usr/bin/env bash
# Checks docs/openapi.yaml, the description of API v1, against the real service:
#   1. installs tools/openapi's pinned npm packages (npm ci; skipped when package-lock.json has not
#      changed since the last install),
#   2. lints the document with Redocly CLI (recommended rules, tools/openapi/redocly.yaml),
#   3. runs the HTTP integration tests with FENCELOCK_API_RECORD set, so the test clients record
#      every exchange with fencelockd (tests/support/api_recorder.h),
#   4. validates every recorded exchange — status, Content-Type, required headers, body — against
#      the document (tools/openapi/check-exchanges.mjs) and prints what was covered.
# Exits non-zero if the lint, a test or any exchange fails.
#
#   scripts/check-openapi.sh                       lint, run the HTTP tests, validate
#   scripts/check-openapi.sh --tests 'PATTERN'     another Catch2 test spec for step 3
#   scripts/check-openapi.sh --record FILE         skip step 3: validate FILE, recorded by an
#                                                  earlier run (FENCELOCK_API_RECORD=FILE ctest …)
#   scripts/check-openapi.sh --lint-only           steps 1 and 2
# FENCELOCK_BUILD_DIR (default build/asan) names the build holding tests/fencelock_service_tests.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# The service's HTTP integration tests (tests/service/http_*_test.cpp, hostile_http_test.cpp).
tests='http*,mtls*,hostile*,sighup*'
record=
lint_only=0
while [ $# -gt 0 ]; do
  case $1 in
    --tests) tests=$2; shift 2 ;;
    --record) record=$2; shift 2 ;;
    --lint-only) lint_only=1; shift ;;
    *) echo "check-openapi.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
build_dir=${FENCELOCK_BUILD_DIR:-build/asan}

tools=$root/tools/openapi
"$tools/install.sh"

status=0
echo "check-openapi: lint (Redocly CLI)"
# From tools/openapi: the ignore file's paths are relative to it. Redocly exits 0 on warnings; a
# warning fails this check too (excuse one in .redocly.lint-ignore.yaml, saying why, if it must).
lint_status=0
lint_out=$(cd "$tools" && REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
  ./node_modules/.bin/redocly lint --config redocly.yaml ../../docs/openapi.yaml 2>&1) || lint_status=$?
grep -v '[║╔╚]' <<<"$lint_out" | sed '/^[[:space:]]*$/d'
if [ "$lint_status" != 0 ] || grep -qE 'You have [0-9]+ warning' <<<"$lint_out"; then
  echo "check-openapi.sh: docs/openapi.yaml does not lint cleanly" >&2
  status=1
fi
[ "$lint_only" = 1 ] && exit "$status"

if [ -z "$record" ]; then
  binary=$build_dir/tests/fencelock_service_tests
  [ -x "$binary" ] || { echo "check-openapi.sh: no $binary (cmake --build --preset asan)" >&2; exit 2; }
  record=$root/$build_dir/api-exchanges.jsonl
  rm -f "$record"
  echo "check-openapi: running the HTTP integration tests ($tests) with recording on"
  log=$root/$build_dir/check-openapi-tests.log
  if ! FENCELOCK_API_RECORD=$record "$binary" "$tests" >"$log" 2>&1; then
    echo "check-openapi.sh: the HTTP tests failed (log: $log):" >&2
    tail -n 30 "$log" >&2
    status=1
  fi
  tail -n 2 "$log"
fi
[ -s "$record" ] || { echo "check-openapi.sh: nothing was recorded in $record" >&2; exit 1; }

echo "check-openapi: validating the recorded exchanges against docs/openapi.yaml"
node "$tools/check-exchanges.mjs" "$root/docs/openapi.yaml" "$record" || status=1
exit "$status"
