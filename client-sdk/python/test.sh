#!/usr/bin/env bash
# Tests the Python client (blocking and asyncio), examples/python-backend and
# examples/fastapi-backend against a live stack (scripts/live-stack.sh: three redis-servers,
# fencelockd, PostgreSQL 15 on loopback), always stopped at exit.
#
#   client-sdk/python/test.sh [--port-base N] [--fencelockd PATH]
#
# Needs the release build (cmake --preset release && cmake --build --preset release) and Debian's
# python3 (/usr/bin/python3) with python3-psycopg2, python3-psycopg, python3-fastapi and
# python3-uvicorn. Ports: the stack uses N+1..N+20 (N = 17900), the tests' own servers N+50..N+99
# (the examples N+70, N+71). Exits non-zero when anything fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
python=/usr/bin/python3
port_base=17900
fencelockd=$root/build/release/service/fencelockd
while [ $# -gt 0 ]; do
  case "$1" in
    --port-base) port_base=$2; shift ;;
    --fencelockd) fencelockd=$2; shift ;;
    *) sed -n '2,11p' "$0" >&2; exit 2 ;;
  esac
  shift
done

echo "== python: compile and lint"
sources=$(find "$here/src" "$here/tests" "$root/examples/python-backend" "$root/examples/fastapi-backend" \
  -name '*.py' | sort)
# Compiled into a temporary prefix: no __pycache__ left in the tree.
pycache=$(mktemp -d)
stack=$(mktemp -d /tmp/fencelock-python-stack.XXXXXX)
trap '"$root/scripts/live-stack.sh" stop "$stack" || true; rm -rf "$pycache"' EXIT
# shellcheck disable=SC2086
PYTHONPYCACHEPREFIX=$pycache $python -m py_compile $sources
if $python -m pyflakes --version >/dev/null 2>&1; then
  # shellcheck disable=SC2086
  $python -m pyflakes $sources
fi

echo "== python: the package installs without the network"
target=$(mktemp -d)
$python -m pip install --quiet --no-build-isolation --no-deps --no-index --disable-pip-version-check \
  --target "$target" "$here" >"$target.log" 2>&1 || { cat "$target.log" >&2; exit 1; }
test -f "$target/fencelock/py.typed"
PYTHONPATH=$target PYTHONPYCACHEPREFIX=$pycache $python -c \
  'import fencelock, fencelock.aio, fencelock.sqlite; assert fencelock.aio.AsyncClient'
rm -rf "$target" "$target.log" "$here/build" "$here"/src/*.egg-info

echo "== python: live stack on port base $port_base"
"$root/scripts/live-stack.sh" start "$stack" --port-base "$port_base" --fencelockd "$fencelockd"
set -a
# shellcheck disable=SC1091
. "$stack/env"
set +a
export FENCELOCK_EXAMPLE_PORT=$((port_base + 70))
export FENCELOCK_FASTAPI_PORT=$((port_base + 71))
export PYTHONPATH=$here/src
export PYTHONPYCACHEPREFIX=$pycache

echo "== python: client tests"
(cd "$here/tests" && timeout 600 $python -m unittest discover -v -t . -s . -p 'test_*.py')
# The oldest Python the package supports, when this machine has it (pyenv): the client alone,
# without psycopg2 or psycopg 3 (the tests that need them skip), which also shows it needs nothing
# else.
oldest=
for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.9*/bin/python3; do
  if [ -x "$candidate" ]; then oldest=$candidate; break; fi
done
if [ -n "$oldest" ]; then
  echo "== python: client tests on $("$oldest" --version)"
  (cd "$here/tests" && timeout 600 "$oldest" -m unittest discover -t . -s . -p 'test_*.py')
fi
echo "== python: examples/python-backend"
(cd "$root/examples/python-backend" && timeout 300 $python -m unittest -v test_app)
echo "== python: examples/fastapi-backend"
(cd "$root/examples/fastapi-backend" && timeout 300 $python -m unittest -v test_app)
echo "python: all passed"
