#!/usr/bin/env bash
# Runs docker-compose.yml as shipped on a machine that reaches no image registry: `up`, the
# Kleppmann demo through HAProxy (`run --rm demo`), `down -v`. Needs root (it may start dockerd).
#   scripts/compose-demo.sh                 fencelock:local from this checkout's release build
#   scripts/compose-demo.sh --from-source   fencelock:local compiled by the Dockerfile (~10 min)
#   scripts/compose-demo.sh --keep          leave the deployment running (stop: docker-compose
#                                           -p fencelock-demo down -v)
#   scripts/compose-demo.sh --require       fail, instead of skipping, where dockerd cannot start
# Images the compose file names and this machine lacks are made from Debian 12's packages:
# debian:12 (and -slim) by debootstrap + `docker import`, redis:7.0, quay.io/coreos/etcd:v3.4.23 and
# haproxy:2.6 by deploy/stand-in-images.Dockerfile. Images already present are used as they are.
# A dockerd this script starts, it stops; one already running it leaves running.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
from_source=0 keep=0 require=0
for arg in "$@"; do
  case $arg in
    --from-source) from_source=1 ;;
    --keep) keep=1 ;;
    --require) require=1 ;;
    *) echo "compose-demo: unknown argument $arg (see the top of $0)" >&2; exit 2 ;;
  esac
done
scripts/install-deps.sh docker.io docker-compose debootstrap
# Debian's client matches Debian's daemon; another `docker` earlier on the PATH may want buildx.
docker() { /usr/bin/docker "$@"; }
project=fencelock-demo
compose() { docker-compose -p "$project" -f "$root/docker-compose.yml" "$@"; }
work=$(mktemp -d /tmp/fencelock-compose.XXXXXX)
dockerd_pid=""

cleanup() {
  local status=$?
  if [ "$keep" = 0 ] && [ -n "${deployed:-}" ]; then
    compose --profile demo down -v --remove-orphans >"$work/down.log" 2>&1 ||
      { echo "compose-demo: docker-compose down failed:" >&2; tail -n 20 "$work/down.log" >&2; status=1; }
  fi
  if [ -n "$dockerd_pid" ]; then
    kill -TERM "$dockerd_pid" 2>/dev/null || true
    for _ in $(seq 150); do kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$dockerd_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

# ---- a Docker engine -------------------------------------------------------------------------
skip_or_fail() {
  if [ "$require" = 1 ]; then echo "compose-demo: $1" >&2; exit 1; fi
  echo "compose-demo: skipped: $1"
  exit 0
}
if ! docker info >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || skip_or_fail "no Docker engine answers and only root may start one"
  dockerd >"$work/dockerd.log" 2>&1 &
  dockerd_pid=$!
  for _ in $(seq 300); do
    docker info >/dev/null 2>&1 && break
    kill -0 "$dockerd_pid" 2>/dev/null || break
    sleep 0.1
  done
  if ! docker info >/dev/null 2>&1; then
    reason=$(grep -E 'level=(fatal|error)' "$work/dockerd.log" | tail -n 1 | sed 's/.*msg="\([^"]*\)".*/\1/')
    skip_or_fail "dockerd cannot start here (${reason:-no answer within 30 s; its log said nothing})"
  fi
  echo "compose-demo: started dockerd (pid $dockerd_pid; stopped at the end)"
fi

# ---- images ------------------------------------------------------------------------------------
have_image() { docker image inspect "$1" >/dev/null 2>&1; }
if ! have_image debian:12 || ! have_image debian:12-slim; then
  mirror=${FENCELOCK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
  echo "compose-demo: making debian:12 with debootstrap from $mirror (~1 min, once)"
  debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
  rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*
  id=$(tar -C "$work/rootfs" -c . | docker import --change 'CMD ["bash"]' -)
  rm -rf "$work/rootfs"
  have_image debian:12 || docker tag "$id" debian:12
  have_image debian:12-slim || docker tag "$id" debian:12-slim
fi
mkdir "$work/empty"
for pair in redis:7.0=redis quay.io/coreos/etcd:v3.4.23=etcd haproxy:2.6=haproxy; do
  image=${pair%=*} stage=${pair#*=}
  have_image "$image" && continue
  echo "compose-demo: making $image from Debian's packages (deploy/stand-in-images.Dockerfile)"
  docker build -q -f deploy/stand-in-images.Dockerfile --target "$stage" -t "$image" "$work/empty" \
    >"$work/build-$stage.log" 2>&1 || { tail -n 20 "$work/build-$stage.log" >&2; exit 1; }
done
if [ "$from_source" = 1 ]; then
  echo "compose-demo: building fencelock:local from source in the Dockerfile's build stage"
  compose build
else
  # The Dockerfile's runtime stage with this checkout's release binaries on it.
  binaries=(service/fencelockd client-sdk/fencelock examples/resource-store examples/kleppmann-demo)
  [ -d build/release ] || cmake --preset release >/dev/null
  cmake --build --preset release --target fencelockd fencelock resource-store kleppmann-demo >"$work/cmake.log" 2>&1 ||
    { tail -n 20 "$work/cmake.log" >&2; exit 1; }
  docker build -q --target runtime -t fencelock-runtime:local . >"$work/build-runtime.log" 2>&1 ||
    { tail -n 20 "$work/build-runtime.log" >&2; exit 1; }
  mkdir "$work/image"
  for b in "${binaries[@]}"; do cp "build/release/$b" "$work/image/"; done
  printf 'FROM fencelock-runtime:local\nCOPY %s /usr/local/bin/\n' "${binaries[*]##*/}" >"$work/image/Dockerfile"
  docker build -q -t fencelock:local "$work/image" >"$work/build-image.log" 2>&1 ||
    { tail -n 20 "$work/build-image.log" >&2; exit 1; }
fi

# ---- up, demo, down ------------------------------------------------------------------------------
for port in 8080 8090; do
  if ss -Hltn "sport = :$port" | grep -q .; then
    echo "compose-demo: 127.0.0.1:$port is taken; docker-compose.yml publishes HAProxy on 8080 and the store on 8090" >&2
    exit 1
  fi
done
deployed=1
echo "compose-demo: docker-compose up -d (5 lock nodes, 3 etcd members, 3 fencelockd, HAProxy, 2 stores)"
compose up -d --no-build >"$work/up.log" 2>&1 || { tail -n 30 "$work/up.log" >&2; exit 1; }
ready=0
for _ in $(seq 240); do
  if [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8080/readyz)" = 200 ]; then ready=1; break; fi
  sleep 0.5
done
if [ "$ready" != 1 ]; then
  echo "compose-demo: fencelock did not become ready through HAProxy within 120 s" >&2
  compose ps >&2
  compose logs --tail 15 fencelockd-a haproxy >&2
  exit 1
fi
echo "compose-demo: ready through HAProxy: $(curl -s http://127.0.0.1:8080/readyz)"
compose --profile demo run --rm demo >"$work/demo.out" 2>&1 || true
cat "$work/demo.out"
if ! grep -q "SAFE: the stale token was rejected" "$work/demo.out"; then
  echo "compose-demo: the demo did not end safe" >&2
  exit 1
fi
if [ "$keep" = 1 ]; then
  echo "compose-demo: left running (project $project): docker-compose -p $project down -v stops it"
  [ -z "$dockerd_pid" ] || { echo "compose-demo: the dockerd it started keeps running too (pid $dockerd_pid)"; dockerd_pid=""; }
fi
echo "compose-demo: the compose file ran as shipped; the demo ended safe"
