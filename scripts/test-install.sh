#!/usr/bin/env bash
# The install test (issue #18): builds the release preset for /usr in build/package, then
#  1. installs it into a temporary prefix and checks the layout (binaries, headers, static and
#     shared libraries with their SONAME, CMake package, pkg-config, unit, man pages, and the bash,
#     zsh and fish completion, each tried in its shell: scripts/check-completion.sh);
#  2. builds tests/install/consumer outside the tree against that prefix, with find_package(fencelock)
#     (static and shared) and with pkg-config, and from source with add_subdirectory (which must
#     not look for Catch2, hiredis or tcmalloc), and runs each against a closed port;
#  3. builds the four Debian packages with CPack (fencelockd, fencelock-cli, libfencelock0,
#     libfencelock-dev), checks their dependencies and lintian (no errors), installs the CLI
#     alone (no user, no server), then all with dpkg -i, runs the unit's ExecStart
#     as the unit's user with its EnvironmentFile (no systemd here) against three real
#     redis-servers on loopback, waits for /readyz, drives it with the installed CLI and a consumer
#     built against /usr, stops it with SIGTERM, then dpkg -r / --purge. systemd-analyze verify
#     checks the unit when it is installed.
# Step 3 needs root and is skipped (with a message) when the package is already installed on this
# machine. Every wait is bounded; every process it starts is stopped on exit.
#   scripts/test-install.sh [--no-deb]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
with_deb=1
[ "${1:-}" = "--no-deb" ] && with_deb=0

scripts/install-deps.sh
build_dir=$root/build/package
work=$(mktemp -d "${TMPDIR:-/tmp}/fencelock-install-test.XXXXXX")
pids=()
created_user=0
installed_deb=0
packages=(fencelockd fencelock-cli libfencelock0 libfencelock-dev)
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "$installed_deb" -eq 1 ]; then
    for package in "${packages[@]}"; do
      if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q installed; then
        dpkg --purge "$package" >/dev/null 2>&1 || true
      fi
    done
  fi
  if [ "$created_user" -eq 1 ]; then
    [ -e /var/lib/fencelock/.fencelock-install-test ] && rm -rf /var/lib/fencelock
    deluser --system fencelock >/dev/null 2>&1 || true
    if getent group fencelock >/dev/null; then delgroup --system fencelock >/dev/null 2>&1 || true; fi
  fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "test-install: FAIL: $*" >&2; exit 1; }
step() { echo "test-install: $*"; }

step "building the release preset for prefix /usr in $build_dir"
cmake --preset release -B "$build_dir" -DCMAKE_INSTALL_PREFIX=/usr -DFENCELOCK_BUILD_TESTS=OFF >/dev/null
cmake --build "$build_dir" -j "$(nproc)" >/dev/null

# --- 1. cmake --install into a temporary prefix -------------------------------------------------
# DESTDIR, not --prefix: the build is for /usr, whose configuration file goes to /etc.
DESTDIR=$work/root cmake --install "$build_dir" >/dev/null
prefix=$work/root/usr
[ -f "$work/root/etc/default/fencelockd" ] || fail "cmake --install did not put /etc/default/fencelockd"
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build_dir/CMakeCache.txt")
for f in bin/fencelockd bin/fencelock include/fencelock/client.h include/fencelock/basic_result.h \
  "$libdir/libfencelock_client.a" "$libdir/libfencelock_protocol.a" "$libdir/libfencelock_client.so" \
  "$libdir/cmake/fencelock/fencelockConfig.cmake" "$libdir/cmake/fencelock/fencelockConfigVersion.cmake" \
  "$libdir/pkgconfig/fencelock.pc" lib/systemd/system/fencelockd.service \
  share/man/man8/fencelockd.8.gz share/man/man1/fencelock.1.gz share/bash-completion/completions/fencelock \
  share/zsh/vendor-completions/_fencelockd share/fish/vendor_completions.d/fencelock.fish \
  share/doc/fencelockd/copyright share/doc/libfencelock-dev/changelog.gz; do
  [ -e "$prefix/$f" ] || fail "cmake --install did not put $f"
done
soname=$(objdump -p "$prefix/$libdir/libfencelock_client.so" | awk '/SONAME/ {print $2}')
[[ $soname == libfencelock_client.so.0.* ]] || fail "libfencelock_client.so has SONAME '$soname'"
[ -e "$prefix/$libdir/$soname" ] || fail "$soname is not installed"
if grep -lE 'Catch2|tcmalloc|Boost|hiredis|fencelock_warnings|fencelock_asio' "$prefix/$libdir"/cmake/fencelock/*.cmake; then
  fail "the installed CMake package names a build-only dependency"
fi
grep -q '^ExecStart=/usr/bin/fencelockd$' "$prefix/lib/systemd/system/fencelockd.service" || fail "unit's ExecStart"
zgrep -q FENCELOCK_REDIS "$prefix/share/man/man8/fencelockd.8.gz" || fail "fencelockd.8 lacks the --redis flag"
scripts/check-completion.sh "$prefix"
step "cmake --install layout OK (SONAME $soname)"

# --- 2. an out-of-tree program against the installed SDK -----------------------------------------
closed_port=http://127.0.0.1:1
cmake -S tests/install/consumer -B "$work/consumer-cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/consumer-cmake" >/dev/null
"$work/consumer-cmake/install-consumer-static" refused "$closed_port"
"$work/consumer-cmake/install-consumer-shared" refused "$closed_port"
# The static fenced_table needs libpq: the installed package must find it (find_dependency).
"$work/consumer-cmake/install-consumer-fenced" "postgresql://fencelock@127.0.0.1:1/x?connect_timeout=2"
# Captured first: `ldd | grep -q` under pipefail fails whenever grep's early exit kills ldd with
# SIGPIPE — which is how CI once failed this check while the right library was loaded.
shared_libs=$(ldd "$work/consumer-cmake/install-consumer-shared")
grep -q "$prefix/$libdir/libfencelock_client.so" <<<"$shared_libs" ||
  fail "install-consumer-shared does not load the installed libfencelock_client.so: $shared_libs"
# The shared SDK must not need OpenSSL's or SQLite's development files.
cmake -S tests/install/consumer -B "$work/consumer-shared-only" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCONSUMER_VARIANTS=shared -DCMAKE_DISABLE_FIND_PACKAGE_OpenSSL=ON -DCMAKE_DISABLE_FIND_PACKAGE_SQLite3=ON \
  >/dev/null
cmake --build "$work/consumer-shared-only" >/dev/null
"$work/consumer-shared-only/install-consumer-shared" refused "$closed_port"
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
# shellcheck disable=SC2046
g++ -std=c++20 -Wall -Wextra -Werror tests/install/consumer/main.cpp -o "$work/consumer-pkgconfig" \
  $(pkg-config --cflags --libs fencelock) -Wl,-rpath,"$prefix/$libdir"
# shellcheck disable=SC2046
g++ -std=c++20 -Wall -Wextra -Werror tests/install/consumer/fenced_main.cpp -o "$work/consumer-fenced-pkgconfig" \
  $(pkg-config --cflags --libs fencelock-fenced-table) -Wl,-rpath,"$prefix/$libdir"
static_libs=$(pkg-config --static --libs fencelock-fenced-table)
grep -q -- -lpq <<<"$static_libs" || fail "fencelock-fenced-table.pc does not bring libpq to a static link: $static_libs"
unset PKG_CONFIG_PATH
"$work/consumer-pkgconfig" refused "$closed_port"
"$work/consumer-fenced-pkgconfig" "postgresql://fencelock@127.0.0.1:1/x?connect_timeout=2"
step "find_package(fencelock) and pkg-config consumers OK"

# The same program with fencelock as a subdirectory: it must need neither Catch2 nor the service's
# dependencies (hiredis, tcmalloc).
cmake -S tests/install/subdirectory -B "$work/consumer-subdir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DFENCELOCK_SOURCE_DIR="$root" -DCMAKE_DISABLE_FIND_PACKAGE_Catch2=ON --no-warn-unused-cli >/dev/null
if grep -E '^(HIREDIS|TCMALLOC)_FOUND|^Catch2_DIR:PATH=/' "$work/consumer-subdir/CMakeCache.txt"; then
  fail "add_subdirectory(fencelock) looked for a test or service dependency"
fi
cmake --build "$work/consumer-subdir" --target install-consumer >/dev/null
"$work/consumer-subdir/install-consumer" refused "$closed_port"
step "add_subdirectory consumer OK (no Catch2, hiredis or tcmalloc)"

[ "$with_deb" -eq 1 ] || exit 0
if [ "$(id -u)" -ne 0 ]; then
  step "SKIPPED the .deb (needs root)"
  exit 0
fi
for package in "${packages[@]}"; do
  if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    step "SKIPPED the .deb: the package $package is already installed on this machine"
    exit 0
  fi
done

# --- 3. the Debian packages ----------------------------------------------------------------------
(cd "$build_dir" && cpack -G DEB -B "$work/deb" >/dev/null)
declare -A deb
for package in "${packages[@]}"; do
  deb[$package]=$(ls "$work/deb/${package}_"*.deb) || fail "cpack made no package $package"
done
depends() { dpkg-deb -f "${deb[$1]}" Depends; }
# The server's dependencies stay with the server: a client host gets neither hiredis nor tcmalloc
# nor the user fencelock.
depends fencelockd | grep -q 'libhiredis0.14' || fail "fencelockd's Depends lacks libhiredis0.14: $(depends fencelockd)"
for package in fencelock-cli libfencelock0 libfencelock-dev; do
  if depends "$package" | grep -qE 'hiredis|tcmalloc|adduser'; then
    fail "$package depends on the server's packages: $(depends "$package")"
  fi
done
depends libfencelock-dev | grep -q 'libfencelock0 (= ' || fail "libfencelock-dev's Depends: $(depends libfencelock-dev)"
# lintian: no errors (warnings are counted, not fatal).
lintian --fail-on error "${deb[@]}" >"$work/lintian.txt" 2>&1 ||
  { cat "$work/lintian.txt" >&2; fail "lintian found errors in the packages"; }
step "lintian: no errors in ${packages[*]} ($(grep -c '^W:' "$work/lintian.txt" || true) warnings)"

# The client alone first: no user, no service.
if ! getent passwd fencelock >/dev/null && [ ! -e /var/lib/fencelock ]; then created_user=1; fi
installed_deb=1
dpkg -i "${deb[fencelock-cli]}" >/dev/null
/usr/bin/fencelock --help >/dev/null || fail "fencelock-cli's fencelock does not run"
if [ "$created_user" -eq 1 ] && getent passwd fencelock >/dev/null; then
  fail "installing fencelock-cli created the user fencelock"
fi
[ ! -e /usr/bin/fencelockd ] || fail "fencelock-cli installed fencelockd"
dpkg -i "${deb[@]}" >/dev/null
getent passwd fencelock >/dev/null || fail "postinst did not create the user fencelock"
[ "$created_user" -eq 1 ] && touch /var/lib/fencelock/.fencelock-install-test
if [ ! -x /usr/bin/fencelockd ] || [ ! -f /usr/lib/systemd/system/fencelockd.service ]; then
  fail "dpkg -i did not install /usr/bin/fencelockd and the unit"
fi
# A second dpkg -i is the upgrade path of the maintainer scripts: it must pass and keep the user.
echo "# edited by the install test" >>/etc/default/fencelockd
dpkg -i --force-confold "${deb[fencelockd]}" >/dev/null
getent passwd fencelock >/dev/null || fail "reinstalling lost the user fencelock"
grep -q 'edited by the install test' /etc/default/fencelockd || fail "reinstalling replaced the edited conffile"
step "dpkg -i ${packages[*]} OK (fencelockd Depends: $(depends fencelockd))"

# Three lock nodes on loopback.
base=17500
redis_ports=()
for i in 1 2 3; do
  port=$((base + i))
  mkdir -p "$work/redis$i"
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work/redis$i" \
    >"$work/redis$i.log" 2>&1 &
  pids+=($!)
  redis_ports+=("lock-$i.test:$port")
done
# The nodes are given by name, from a hosts file that only this test's processes see
# (libnss-wrapper), as a user would name them in Compose or Kubernetes.
# The daemon reads it as its own user: the work directory (no secrets in it) must be searchable.
chmod 0755 "$work"
printf '127.0.0.1 lock-1.test lock-2.test lock-3.test fencelockd.test\n' >"$work/hosts"
chmod 0644 "$work/hosts"
name_env=(LD_PRELOAD=libnss_wrapper.so NSS_WRAPPER_HOSTS="$work/hosts")
for port in $((base + 1)) $((base + 2)) $((base + 3)); do
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-cli -p "$port" ping >/dev/null || fail "redis-server on $port did not start"
done

# The unit's command line, its environment file and user, as systemd would run them.
unit=/usr/lib/systemd/system/fencelockd.service
if command -v systemd-analyze >/dev/null; then
  systemd-analyze verify "$unit" || fail "systemd-analyze verify refuses $unit"
fi
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
env_file=$(sed -n 's/^EnvironmentFile=-\{0,1\}//p' "$unit")
user=$(sed -n 's/^User=//p' "$unit")
state_dir=/var/lib/$(sed -n 's/^StateDirectory=//p' "$unit")
[ -f "$env_file" ] || fail "the unit's EnvironmentFile $env_file is not installed"
install -d -o "$user" -g "$user" -m 0750 "$state_dir"
listen=127.0.0.1:$((base + 10))
redis_list=$(IFS=,; echo "${redis_ports[*]}")
(
  set -a
  # shellcheck disable=SC1090
  . "$env_file"
  set +a
  # The CLI below reaches it by the name fencelockd.test: an open fencelockd answers only the
  # names it is told (docs/api.md, "Browsers").
  export FENCELOCK_REDIS=$redis_list FENCELOCK_LISTEN=$listen FENCELOCK_LOG_FORMAT=json \
    FENCELOCK_ALLOWED_HOSTS=fencelockd.test
  cd "$state_dir"
  umask 0027
  # shellcheck disable=SC2086
  exec env "${name_env[@]}" setpriv --reuid "$user" --regid "$user" --init-groups -- $exec_start
) >"$work/fencelockd.log" 2>&1 &
daemon_pid=$!
pids+=("$daemon_pid")
ready=0
for _ in $(seq 100); do
  if curl -fs "http://$listen/readyz" >/dev/null 2>&1; then ready=1; break; fi
  kill -0 "$daemon_pid" 2>/dev/null || break
  sleep 0.1
done
[ "$ready" -eq 1 ] || { cat "$work/fencelockd.log" >&2; fail "the unit's ExecStart never became ready"; }
[ "$(stat -c %U "$state_dir/tokens.db")" = "$user" ] || fail "tokens.db is not owned by $user"
step "unit's ExecStart ($exec_start as $user, $env_file, --redis $redis_list) answers /readyz on $listen"

# What an operator looks at first: the metrics name the nodes as configured, and every log line
# is one JSON object.
metrics=$(curl -fs "http://$listen/metrics") || fail "GET /metrics failed"
for i in 1 2 3; do
  grep -q "^fencelock_node_up{node=\"lock-$i.test:$((base + i))\"} 1$" <<<"$metrics" ||
    fail "/metrics does not show lock-$i.test:$((base + i)) up"
done
grep -q '^fencelock_build_info{' <<<"$metrics" || fail "/metrics lacks fencelock_build_info"
drawn=$(/usr/bin/fencelock --endpoint "http://$listen" token --next install-check)
grep -q '"token":' <<<"$drawn" || fail "the installed CLI could not draw a token: $drawn"
drawn=$(env "${name_env[@]}" /usr/bin/fencelock --endpoint "http://fencelockd.test:${listen##*:}" \
  token --next install-check)
grep -q '"token":' <<<"$drawn" || fail "the installed CLI could not reach fencelockd.test by name: $drawn"
python3 - "$work/fencelockd.log" <<'PY' || fail "fencelockd's log is not one JSON object a line"
import json, sys
events = [json.loads(line)["event"] for line in open(sys.argv[1]) if line.strip()]
assert "starting" in events and "lock_node_up" in events and "request" in events, events
PY
step "metrics name the nodes as configured, the log is JSON, the CLI reaches fencelockd by name"
cmake -S tests/install/consumer -B "$work/consumer-usr" -G Ninja >/dev/null
cmake --build "$work/consumer-usr" >/dev/null
"$work/consumer-usr/install-consumer-shared" live "http://$listen"
"$work/consumer-usr/install-consumer-static" live "http://$listen"
step "installed CLI and a find_package consumer against /usr work against it"

kill -TERM "$daemon_pid"
daemon_status=0
wait "$daemon_pid" || daemon_status=$?
[ "$daemon_status" -eq 0 ] || { cat "$work/fencelockd.log" >&2; fail "fencelockd exited $daemon_status on SIGTERM"; }

dpkg -r "${packages[@]}" >/dev/null
[ ! -e /usr/bin/fencelockd ] || fail "dpkg -r left /usr/bin/fencelockd"
[ -f /etc/default/fencelockd ] || fail "dpkg -r removed the conffile /etc/default/fencelockd"
dpkg --purge fencelockd >/dev/null  # the others, without conffiles, are gone with dpkg -r
[ ! -e /etc/default/fencelockd ] || fail "dpkg --purge left /etc/default/fencelockd"
installed_deb=0
step "dpkg -r and --purge OK"
step "all passed"
