#!/usr/bin/env bash
# Stops the etcd started by start-etcd.sh DATA_DIR: SIGTERM, then SIGKILL after 5 s. Idempotent:
# no pid file or no such process is success. It only signals the pid in DATA_DIR/etcd.pid, and
# only if that process is an etcd whose command line names DATA_DIR (a recycled pid is left alone).
#
#   stop-etcd.sh DATA_DIR [--rm]        --rm also deletes DATA_DIR afterwards
#   stop-etcd.sh --is-running DATA_DIR  exit 0 if that etcd is running (used by start-etcd.sh)
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

ours() { # ours PID: is PID our etcd?
  [ -r "/proc/$1/cmdline" ] || return 1
  local cmd
  cmd=$(tr '\0' ' ' <"/proc/$1/cmdline")
  [ "$(cat "/proc/$1/comm" 2>/dev/null)" = etcd ] && [[ "$cmd" == *"--data-dir $abs_dir "* ]]
}

abs_dir=$data_dir
[ -d "$data_dir" ] && abs_dir=$(cd "$data_dir" && pwd)
pid_file=$abs_dir/etcd.pid
pid=""
[ -f "$pid_file" ] && pid=$(cat "$pid_file")

if [ "$check_only" -eq 1 ]; then
  [ -n "$pid" ] && ours "$pid"
  exit
fi

if [ -n "$pid" ] && ours "$pid"; then
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do
    ours "$pid" || break
    sleep 0.1
  done
  if ours "$pid"; then
    echo "stop-etcd: pid $pid ignored SIGTERM for 5 s; sending SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 20); do ours "$pid" || break; sleep 0.1; done
  fi
  echo "stop-etcd: stopped pid $pid" >&2
fi
rm -f "$pid_file"
if [ "$remove" -eq 1 ] && [ -d "$abs_dir" ]; then
  rm -rf "$abs_dir"
fi
exit 0
