#!/usr/bin/env bash
# Writes the Python and Node clients as files that install without the network:
#   DIR/fencelock-<version>-py3-none-any.whl   pip install --no-index DIR/fencelock-…whl
#   DIR/fencelock-<version>.tar.gz             the Python sdist
#   DIR/fencelock-<version>.tgz                npm install DIR/fencelock-….tgz pg   (pg: your app's)
# With --check, also installs each as a user would: the wheel into a fresh venv with --no-index,
# the tarball into a fresh app with pg as the app's own dependency, and imports both (the guarded
# writes included). Builds outside the tree (no build/ or egg-info left behind).
#
#   scripts/package-clients.sh [--out DIR] [--check]      (default DIR: dist/)
set -euo pipefail
cd "$(dirname "$0")/.."
out=dist
check=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift ;;
    --check) check=1 ;;
    *) sed -n '2,10p' "$0" >&2; exit 2 ;;
  esac
  shift
done

# Debian's build tools for the wheel (pip's isolated build would fetch setuptools and wheel).
missing=()
for package in python3-pip python3-setuptools python3-wheel python3-venv; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/fencelock-package.XXXXXX")
trap 'rm -rf "$work"' EXIT

cp -r client-sdk/python "$work/python"
cp LICENSE "$work/python/"
rm -rf "$work/python/build" "$work/python"/src/*.egg-info
(
  cd "$work/python"
  /usr/bin/python3 -m pip wheel --quiet --no-build-isolation --no-deps --no-index \
    --disable-pip-version-check -w "$out" . >"$work/wheel.log" 2>&1 || { cat "$work/wheel.log" >&2; exit 1; }
  /usr/bin/python3 -c 'import sys; from setuptools import build_meta; build_meta.build_sdist(sys.argv[1])' \
    "$out" >"$work/sdist.log" 2>&1 || { cat "$work/sdist.log" >&2; exit 1; }
)
tarball=$(cd client-sdk/node && npm pack --silent --pack-destination "$out")
echo "package-clients: wrote to $out:"
(cd "$out" && ls -1 fencelock-*)
[ "$check" -eq 1 ] || exit 0

# The wheel, into a fresh venv, without the network.
wheel=$(ls "$out"/fencelock-*-py3-none-any.whl | tail -n 1)
/usr/bin/python3 -m venv --system-site-packages "$work/venv"  # Debian's psycopg2 and psycopg 3
"$work/venv/bin/pip" install --quiet --no-index --disable-pip-version-check "$wheel"
(cd "$work" && venv/bin/python -c '
import fencelock, fencelock.postgres, fencelock.psycopg, fencelock.aio, fencelock.sqlite
from importlib.metadata import metadata
assert fencelock.Client() and fencelock.aio.AsyncClient
assert metadata("fencelock")["License"] == "Apache-2.0", metadata("fencelock")["License"]
')
echo "package-clients: the wheel installs into a fresh venv with --no-index"

# The tarball, into a fresh app that depends on pg itself (the client's pg is an optional peer).
mkdir "$work/app"
(
  cd "$work/app"
  printf '{"name":"app","version":"1.0.0","private":true,"type":"module"}\n' >package.json
  npm install --silent --prefer-offline --no-audit --no-fund "$out/$tarball" pg@8 >/dev/null
  node -e '
    const { Client } = await import("fencelock");
    const { guardedUpdate } = await import("fencelock/postgres");
    if (typeof guardedUpdate !== "function" || !new Client()) process.exit(1);
  ' --input-type=module
  [ ! -L node_modules/fencelock ] || { echo "package-clients: node_modules/fencelock is a link" >&2; exit 1; }
)
echo "package-clients: the npm tarball installs into an app with pg as its own dependency"
