# fencelockd, the fencelock CLI, the example resource store (which links libpq for --db
# postgresql://...) and the Kleppmann demo, built from Debian 12 packages only.
# The build stage's package list must equal `scripts/install-deps.sh --list-build` (CI checks it).

# The runtime without the binaries, first so that `--target runtime` builds nothing else:
# scripts/compose-demo.sh puts a host build of the same sources on it instead of compiling again.
FROM debian:12-slim AS runtime
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libhiredis0.14 libsqlite3-0 libpq5 libssl3 libtcmalloc-minimal4 libstdc++6 curl \
    && rm -rf /var/lib/apt/lists/* && useradd --system --home /data fencelock && mkdir -p /data && chown fencelock /data
USER fencelock
WORKDIR /data
# fencelockd's own default is 127.0.0.1:8080, which `docker run -p 8080:8080` cannot reach from
# outside the container: the image listens on every interface instead (a --listen flag still wins).
# Anyone who can reach the published port may take every lock: publish it on a private network or
# set FENCELOCK_AUTH_FILE (docs/operations.md).
ENV FENCELOCK_LISTEN=0.0.0.0:8080
EXPOSE 8080
HEALTHCHECK CMD curl -fs http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["fencelockd"]

FROM debian:12 AS build
ARG BUILD_PACKAGES="g++ cmake ninja-build pkg-config libboost-dev nlohmann-json3-dev libhiredis-dev libsqlite3-dev libssl-dev libgoogle-perftools-dev catch2 help2man libpq-dev python3-yaml"
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $BUILD_PACKAGES \
    && rm -rf /var/lib/apt/lists/*
COPY . /src
WORKDIR /src
RUN cmake --preset release -DFENCELOCK_BUILD_TESTS=OFF && cmake --build --preset release

# The image: the runtime with the binaries of the build stage.
FROM runtime
COPY --from=build /src/build/release/service/fencelockd /src/build/release/client-sdk/fencelock \
     /src/build/release/examples/resource-store /src/build/release/examples/kleppmann-demo /usr/local/bin/
