# Stand-ins for the public images docker-compose.yml names (redis:7.0, quay.io/coreos/etcd:v3.4.23,
# haproxy:2.6), built from Debian 12's own packages for a machine that reaches no image registry.
# scripts/compose-demo.sh builds a stage only when the image it stands in for is absent, from a
# debian:12 that debootstrap made. Each runs the compose file's command as the real image would.

FROM debian:12 AS redis
# The official image turns protected mode off (the lock nodes are reached over the compose
# network, not loopback); Debian's redis-server keeps it on unless told.
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      redis-server && rm -rf /var/lib/apt/lists/* && mkdir -p /data && chown redis:redis /data \
    && printf '#!/bin/sh\nif [ "$1" = redis-server ]; then exec "$@" --protected-mode no; fi\nexec "$@"\n' \
       >/usr/local/bin/stand-in-entrypoint && chmod 755 /usr/local/bin/stand-in-entrypoint
LABEL org.fencelock.stand-in="redis:7.0 from Debian 12's redis-server"
USER redis
WORKDIR /data
EXPOSE 6379
ENTRYPOINT ["stand-in-entrypoint"]
CMD ["redis-server"]

FROM debian:12 AS etcd
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      etcd-server && rm -rf /var/lib/apt/lists/*
LABEL org.fencelock.stand-in="quay.io/coreos/etcd:v3.4.23 from Debian 12's etcd-server"
EXPOSE 2379 2380
CMD ["etcd"]

FROM debian:12 AS haproxy
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      haproxy && rm -rf /var/lib/apt/lists/* && mkdir -p /usr/local/etc/haproxy
LABEL org.fencelock.stand-in="haproxy:2.6 from Debian 12's haproxy"
USER haproxy
STOPSIGNAL SIGUSR1
EXPOSE 8080
CMD ["haproxy", "-W", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]
