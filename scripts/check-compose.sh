#!/usr/bin/env bash
# CI check for the container files (there is no Docker engine here to run them): the compose file
# validates offline, HAProxy accepts its configuration (deploy/haproxy.cfg; `haproxy -c` parses it
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
