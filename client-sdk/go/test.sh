#!/usr/bin/env bash
# Tests the Go client (client-sdk/go) and examples/go-backend against a live stack
# (scripts/live-stack.sh: three redis-servers, fencelockd, PostgreSQL 15 on loopback), always
# stopped at exit. Offline: Go's build cache and module cache live in a temporary directory removed
# at exit, GOPROXY=off, and lib/pq comes from Debian's golang-github-lib-pq-dev.
#
#   client-sdk/go/test.sh [--port-base N] [--fencelockd PATH]
#
# Needs the release build and Debian's golang-go (Go >= 1.19) and golang-github-lib-pq-dev.
# Ports: the stack uses N+1..N+20 (N = 18100), the tests' own servers N+50..N+99.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
port_base=18100
fencelockd=$root/build/release/service/fencelockd
while [ $# -gt 0 ]; do
  case "$1" in
    --port-base) [ $# -ge 2 ] || { sed -n '2,10p' "$0" >&2; exit 2; }; port_base=$2; shift ;;
    --fencelockd) [ $# -ge 2 ] || { sed -n '2,10p' "$0" >&2; exit 2; }; fencelockd=$2; shift ;;
    *) sed -n '2,10p' "$0" >&2; exit 2 ;;
  esac
  shift
done
pq=/usr/share/gocode/src/github.com/lib/pq
if ! command -v go >/dev/null || ! command -v gofmt >/dev/null; then
  echo "go-test: no go on the PATH (apt-get install golang-go golang-github-lib-pq-dev)" >&2
  exit 2
fi
go_minor=$(go env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
[ "${go_minor:-0}" -ge 19 ] || { echo "go-test: Go >= 1.19 needed, found $(go env GOVERSION)" >&2; exit 2; }
[ -f "$pq/go.mod" ] ||
  { echo "go-test: lib/pq is missing at $pq (apt-get install golang-github-lib-pq-dev)" >&2; exit 2; }

work=$(mktemp -d /tmp/fencelock-go.XXXXXX)
# Apart from $work (mode 700): PostgreSQL runs as the postgres user and must reach its directory.
stack=$(mktemp -d /tmp/fencelock-go-stack.XXXXXX)
trap '"$root/scripts/live-stack.sh" stop "$stack" >/dev/null 2>&1 || true; chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
export GOPATH=$work/gopath GOCACHE=$work/gocache GOFLAGS=-mod=mod GOPROXY=off GOSUMDB=off \
  GO111MODULE=on GOWORK=off CGO_ENABLED=0 GOTELEMETRY=off
modules=("$here" "$here/pgtest" "$root/examples/go-backend")

echo "== go: $(go version | cut -d' ' -f3-4): gofmt, vet"
unformatted=$(gofmt -l "${modules[@]}")
[ -z "$unformatted" ] || { echo "go-test: not gofmt'ed:" >&2; echo "$unformatted" >&2; exit 1; }
for module in "${modules[@]}"; do
  (cd "$module" && go vet ./...)
done
# The library itself needs nothing but the standard library.
(cd "$here" && [ "$(go list -m all)" = fencelock.dev/fencelock ] &&
  [ -z "$(go list -deps -test -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./... | grep -v '^fencelock\.dev/fencelock' || true)" ]) ||
  { echo "go-test: the library imports something outside the standard library" >&2; exit 1; }

echo "== go: unit tests"
(cd "$here" && go test -count=1 -short ./...)

echo "== go: live stack on port base $port_base"
"$root/scripts/live-stack.sh" start "$stack" --port-base "$port_base" --fencelockd "$fencelockd" >/dev/null
set -a
# shellcheck disable=SC1091
. "$stack/env"
set +a
# lib/pq asks for TLS unless told otherwise; the stack's PostgreSQL on loopback has none.
export PGSSLMODE=disable

echo "== go: client tests against the live stack"
(cd "$here" && timeout 300 go test -count=1 ./...)
echo "== go: guarded writes and the README's example against PostgreSQL"
(cd "$here/pgtest" && timeout 300 go test -count=1 ./...)
echo "== go: examples/go-backend"
(cd "$root/examples/go-backend" && timeout 300 go test -count=1 ./...)
echo "go: all passed"
