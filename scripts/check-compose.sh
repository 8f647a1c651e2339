#!/usr/bin/env bash
# CI check for the container files (there is no Docker engine here to run them): the compose file
# validates offline, and the Dockerfile's build stage installs exactly the build's packages.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh docker-compose
docker-compose -f docker-compose.yml config -q
echo "check-compose: docker-compose.yml is valid"

wanted=$(scripts/install-deps.sh --list-build | sort)
declared=$(sed -n 's/^ARG BUILD_PACKAGES="\(.*\)"$/\1/p' Dockerfile | tr ' ' '\n' | sed '/^$/d' | sort)
if [ "$wanted" != "$declared" ]; then
  echo "check-compose: the Dockerfile's BUILD_PACKAGES differ from scripts/install-deps.sh:" >&2
  diff <(echo "$wanted") <(echo "$declared") >&2 || true
  exit 1
fi
echo "check-compose: Dockerfile packages match the build's"
