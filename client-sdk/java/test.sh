#!/usr/bin/env bash
# Tests the Java client (client-sdk/java) and examples/java-backend against a live stack
# (scripts/live-stack.sh: three redis-servers, fencelockd, PostgreSQL 15 on loopback), always
# stopped at exit: compiles with -Xlint:all -Werror, builds the jar, runs the JUnit 5 suite in one
# JVM (unit tests, the client against the stack, fencelockd instances of its own with TLS and API
# keys, guarded JDBC writes, the example backend), then the README's Java example as written.
#
#   client-sdk/java/test.sh [--port-base N] [--fencelockd PATH]
#
# Needs the release build (cmake --preset release && cmake --build --preset release), JDK 17
# (openjdk-17-jdk-headless) and Debian's junit5 and libpostgresql-jdbc-java. Nothing is fetched.
# Ports: the stack uses N+1..N+20 (N = 18200), the tests' own servers N+50..N+99. Exits non-zero
# when anything fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
port_base=18200
fencelockd=$root/build/release/service/fencelockd
while [ $# -gt 0 ]; do
  case "$1" in
    --port-base) [ $# -ge 2 ] || { sed -n '8p' "$0" >&2; exit 2; }; port_base=$2; shift ;;
    --fencelockd) [ $# -ge 2 ] || { sed -n '8p' "$0" >&2; exit 2; }; fencelockd=$2; shift ;;
    *) sed -n '2,14p' "$0" >&2; exit 2 ;;
  esac
  shift
done

junit=/usr/share/java/junit-platform-console-standalone.jar
pgjdbc=/usr/share/java/postgresql.jar
for tool in javac java jar; do
  command -v "$tool" >/dev/null ||
    { echo "java-test: no $tool on the PATH (apt-get install openjdk-17-jdk-headless)" >&2; exit 2; }
done
javac -version 2>&1 | grep -Eq 'javac (1[7-9]|[2-9][0-9])' ||
  { echo "java-test: JDK 17 or newer needed, found $(javac -version 2>&1)" >&2; exit 2; }
[ -f "$junit" ] || { echo "java-test: no $junit (apt-get install junit5)" >&2; exit 2; }
[ -f "$pgjdbc" ] || { echo "java-test: no $pgjdbc (apt-get install libpostgresql-jdbc-java)" >&2; exit 2; }
command -v openssl >/dev/null || { echo "java-test: no openssl (apt-get install openssl)" >&2; exit 2; }
command -v redis-cli >/dev/null || { echo "java-test: no redis-cli (apt-get install redis-server)" >&2; exit 2; }
[ -x "$fencelockd" ] || { echo "java-test: no fencelockd at $fencelockd (build the release preset)" >&2; exit 2; }

build=$(mktemp -d /tmp/fencelock-java-build.XXXXXX)
stack=$(mktemp -d /tmp/fencelock-java-stack.XXXXXX)
trap '"$root/scripts/live-stack.sh" stop "$stack" || true; rm -rf "$build"' EXIT

echo "== java: compile (-Xlint:all -Werror) and jar"
mapfile -t main_sources < <(find "$here/src/main/java" -name '*.java' | sort)
mapfile -t test_sources < <(find "$here/src/test/java" "$root/examples/java-backend/test" -name '*.java' | sort)
javac -Xlint:all -Werror --release 17 -d "$build/main" "${main_sources[@]}"
jar --create --file "$build/fencelock.jar" -C "$build/main" .
javac -Xlint:all -Werror --release 17 -cp "$build/fencelock.jar:$pgjdbc" -d "$build/example" \
  "$root/examples/java-backend/DepositServer.java"
javac -Xlint:all -Werror -Xlint:-processing --release 17 -cp "$build/fencelock.jar:$junit:$pgjdbc" -d "$build/test" \
  "${test_sources[@]}"
# The README's runnable example, exactly as written: the first ```java block after "## Quick example".
awk '/^## Quick example/{q=1} q&&/^```java$/{on=1; next} on&&/^```$/{exit} on{print}' "$here/README.md" \
  >"$build/QuickExample.java"
grep -q 'public static void main' "$build/QuickExample.java" ||
  { echo "java-test: no runnable Java block under '## Quick example' in README.md" >&2; exit 1; }

echo "== java: live stack on port base $port_base"
"$root/scripts/live-stack.sh" start "$stack" --port-base "$port_base" --fencelockd "$fencelockd" >/dev/null
set -a
# shellcheck disable=SC1091
. "$stack/env"
set +a
# postgresql://USER@HOST:PORT/DB -> jdbc:postgresql://HOST:PORT/DB?user=USER
rest=${DATABASE_URL#postgresql://}
export JDBC_URL="jdbc:postgresql://${rest#*@}?user=${rest%%@*}"
export FENCELOCK_EXAMPLE_PORT=$((port_base + 70))
export FENCELOCK_EXAMPLE_CLASSPATH=$build/example:$build/fencelock.jar:$pgjdbc
export FENCELOCK_JAVA_README=$here/README.md

echo "== java: JUnit 5 (client, keeper, TLS and keys, guarded writes, examples/java-backend)"
timeout 300 java -jar "$junit" --disable-banner --disable-ansi-colors --details=tree --details-theme=ascii \
  --fail-if-no-tests --class-path "$build/test:$build/fencelock.jar:$pgjdbc" \
  --scan-class-path "$build/test"

echo "== java: README example, as written"
out=$(timeout 60 java -cp "$build/fencelock.jar:$pgjdbc" "$build/QuickExample.java")
echo "$out"
grep -q '^applied' <<<"$out" || { echo "java-test: the README example did not apply its write" >&2; exit 1; }
echo "java: all passed"
