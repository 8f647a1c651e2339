#!/usr/bin/env bash
# Stops the ZooKeeper servers started by start-zookeeper.sh DATA_DIR: SIGTERM, then SIGKILL after
# 5 s. Idempotent: no pid file or no such process is success. It only signals the pids in
# DATA_DIR/server-*/zookeeper.pid, and only a java whose command line names that server's zoo.cfg
# (a recycled pid is left alone).
#
#   stop-zookeeper.sh DATA_DIR [--rm]        --rm also deletes DATA_DIR afterwards
#   stop-zookeeper.sh --is-running DATA_DIR  exit 0 if all of its servers are running
set -euo pipefail

check_only=0
if [ "${1:-}" = "--is-running" ]; then check_only=1; shift; fi
if [ $# -lt 1 ] || [ $# -gt 2 ] || { [ $# -eq 2 ] && [ "$2" != "--rm" ]; }; then
  echo "usage: $0 DATA_DIR [--rm] | $0 --is-running DATA_DIR" >&2
  exit 2
fi
data_dir=$1
remove=0
[ "${2:-}" = "--rm" ] && remove=1
abs_dir=$data_dir
[ -d "$data_dir" ] && abs_dir=$(cd "$data_dir" && pwd)

ours() {  # ours PID CFG: is PID the java serving CFG?
  [ -r "/proc/$1/cmdline" ] || return 1
  [ "$(cat "/proc/$1/comm" 2>/dev/null)" = java ] && [[ "$(tr '\0' ' ' <"/proc/$1/cmdline")" == *" $2 "* ]]
}

pid_files=("$abs_dir"/server-*/zookeeper.pid)
[ -e "${pid_files[0]}" ] || pid_files=()

if [ "$check_only" -eq 1 ]; then
  [ ${#pid_files[@]} -gt 0 ] || exit 1
  for f in "${pid_files[@]}"; do ours "$(cat "$f")" "$(dirname "$f")/zoo.cfg" || exit 1; done
  exit 0
fi

pids=()
cfgs=()
for f in "${pid_files[@]}"; do
  pid=$(cat "$f")
  cfg=$(dirname "$f")/zoo.cfg
  if ours "$pid" "$cfg"; then
    kill -TERM "$pid" 2>/dev/null || true
    pids+=("$pid")
    cfgs+=("$cfg")
  fi
  rm -f "$f"
done
for i in "${!pids[@]}"; do
  for _ in $(seq 1 50); do ours "${pids[$i]}" "${cfgs[$i]}" || break; sleep 0.1; done
  if ours "${pids[$i]}" "${cfgs[$i]}"; then
    echo "stop-zookeeper: pid ${pids[$i]} ignored SIGTERM for 5 s; sending SIGKILL" >&2
    kill -KILL "${pids[$i]}" 2>/dev/null || true
  fi
  echo "stop-zookeeper: stopped pid ${pids[$i]}" >&2
done
if [ "$remove" -eq 1 ] && [ -d "$abs_dir" ]; then
  rm -rf "$abs_dir"
fi
exit 0
