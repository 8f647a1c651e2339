#!/usr/bin/env bash
# CI check for the container files without a Docker engine (scripts/compose-demo.sh runs them where
# one starts): the compose file validates offline, HAProxy accepts its configuration (deploy/haproxy.cfg; `haproxy -c` parses it
# without binding anything), and the Dockerfile's build stage installs exactly the build's packages.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh docker-compose haproxy
docker-compose -f docker-compose.yml config -q
echo "check-compose: docker-compose.yml is valid"
if ! haproxy -c -q -f deploy/haproxy.cfg; then
  echo "check-compose: HAProxy refuses deploy/haproxy.cfg" >&2
  exit 1
fi
echo "check-compose: deploy/haproxy.cfg is valid"

wanted=$(scripts/install-deps.sh --list-build | sort)
declared=$(sed -n 's/^ARG BUILD_PACKAGES="\(.*\)"$/\1/p' Dockerfile | tr ' ' '\n' | sed '/^$/d' | sort)
if [ "$wanted" != "$declared" ]; then
  echo "check-compose: the Dockerfile's BUILD_PACKAGES differ from scripts/install-deps.sh:" >&2
  diff <(echo "$wanted") <(echo "$declared") >&2 || true
  exit 1
fi
echo "check-compose: Dockerfile packages match the build's"

# Issue #18's container findings stay fixed: a local build/ never enters the build context (its
# CMakeCache.txt broke the image's configure step), the image listens beyond loopback, and the store
# service's health check probes the store's own port, not the inherited fencelockd one.
grep -qx 'build/' .dockerignore || { echo "check-compose: .dockerignore must exclude build/" >&2; exit 1; }
grep -qx 'ENV FENCELOCK_LISTEN=0.0.0.0:8080' Dockerfile ||
  { echo "check-compose: the image must default to FENCELOCK_LISTEN=0.0.0.0:8080" >&2; exit 1; }
store_config=$(docker-compose -f docker-compose.yml config | sed -n '/^  store:/,/^  [a-z]/p')
store_port=$(grep -o -- '0\.0\.0\.0:[0-9]*' <<<"$store_config" | head -n 1 | cut -d: -f2)
if ! grep -A 8 'healthcheck:' <<<"$store_config" | grep -q "127.0.0.1:$store_port/healthz"; then
  echo "check-compose: the store's health check does not probe its port $store_port" >&2
  exit 1
fi
echo "check-compose: .dockerignore, the image's listen address and the store's health check are right"
