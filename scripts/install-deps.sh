#!/usr/bin/env bash
# Installs fencelock's build and test dependencies from Debian 12 packages, only those missing.
# Idempotent and quiet when everything is present. Needs root (or sudo) only when installing.
#   scripts/install-deps.sh            build + test packages
#   scripts/install-deps.sh --list-build   print the build packages (the Dockerfile must match)
set -euo pipefail

# Everything the build needs; the Dockerfile's build stage installs exactly these (help2man: the
# man pages are generated from --help at build time; python3-yaml: docs/openapi.yaml is compiled
# into fencelockd as JSON; libpq-dev: FencedTable on PostgreSQL).
build_packages=(
  g++ cmake ninja-build pkg-config
  libboost-dev nlohmann-json3-dev libhiredis-dev libsqlite3-dev libssl-dev libgoogle-perftools-dev
  catch2 help2man libpq-dev python3-yaml
)
# Needed to run the tests and the quickstart (etcd-server: the etcd token source's tests;
# dpkg-dev, adduser and lintian: scripts/test-install.sh builds, checks and installs the .debs;
# libnss-wrapper: it names the lock nodes in a hosts file only its processes see; postgresql-15
# and python3-psycopg2: the PostgreSQL FencedTable, the Python client and the web-backend examples
# run against a real server — scripts/live-stack.sh; zsh and fish: the install test tries the
# completion in each; libsimdjson-dev: bench/json_parse_bench, so that it always compiles;
# python3-psycopg, python3-fastapi and python3-uvicorn: the asyncio client's guarded writes and
# examples/fastapi-backend; openjdk-17-jdk-headless, junit5 and libpostgresql-jdbc-java: the Java
# client and examples/java-backend; golang-go and golang-github-lib-pq-dev: the Go client and
# examples/go-backend).
# Node.js and npm (the Node client, the OpenAPI lint, the benchmark's peers) come from Debian
# unless a node is already on the PATH.
run_packages=(redis-server etcd-server curl dpkg-dev adduser libnss-wrapper postgresql-15 python3-psycopg2
  zsh fish lintian libsimdjson-dev python3-psycopg python3-fastapi python3-uvicorn
  openjdk-17-jdk-headless junit5 libpostgresql-jdbc-java golang-go golang-github-lib-pq-dev)
command -v node >/dev/null || run_packages+=(nodejs)
command -v npm >/dev/null || run_packages+=(npm)

if [ "${1:-}" = "--list-build" ]; then
  printf '%s\n' "${build_packages[@]}"
  exit 0
fi
packages=("${build_packages[@]}" "${run_packages[@]}" "$@")

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
