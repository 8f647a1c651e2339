#!/usr/bin/env python3
"""Runs a load generator and measures what it cost the processes around it; for bench/scale.sh.

usage: proc_probe.py [--watch NAME=PID[,PID...]]... [--redis PORT[,PORT...]] [--metrics URL]
                     [--interval S] -- COMMAND [ARGS...]

Runs COMMAND (one JSON line on its stdout, as http_bench writes), samples every --interval
seconds (0.25) while it runs, and prints that JSON line with a "probe" object added:

  wall_s             how long COMMAND ran
  machine_busy       share of all the machine's cores busy over the run (/proc/stat; others'
                     processes included), and cores: how many there are
  procs.NAME         for each --watch group (several PIDs: e.g. the five redis-servers):
                     cpu_cores (CPU time ÷ wall time, all PIDs together), busiest_pid_cores (the
                     busiest PID of the group), busiest_thread_cores (the busiest thread of any of
                     them: a single-threaded loop saturates at 1.0), rss_start_kib / rss_peak_kib
                     (sum over the group's PIDs, sampled), fds_peak (sum) and fd_limit (the
                     smallest soft RLIMIT_NOFILE among them)
  procs.loader       the same for COMMAND itself (its CPU from wait4, exact; its RSS sampled)
  redis_used_memory  with --redis: INFO memory's used_memory of each port before and after,
                     in bytes; redis_commands / redis_evalsha: each port's commands processed
                     and EVALSHA calls during the run (the probe's own INFO calls included)
  metrics_peak       with --metrics (fencelockd's /metrics URL): the peak of
                     fencelock_acquires_waiting and fencelock_http_open_connections, scraped
                     about once a second; metrics_delta: how much node_timeouts_total and
                     node_disconnects_total (all lock nodes together) rose over the run

Linux only. COMMAND's exit status is passed on; its stderr goes through untouched.
"""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

CLK_TCK = os.sysconf("SC_CLK_TCK")


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def stat_ticks(path):
    """utime + stime of a /proc/.../stat file, in clock ticks (None if gone)."""
    text = read(path)
    if text is None:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])


def thread_ticks(pid):
    tasks = f"/proc/{pid}/task"
    try:
        tids = os.listdir(tasks)
    except OSError:
        return {}
    out = {}
    for tid in tids:
        ticks = stat_ticks(f"{tasks}/{tid}/stat")
        if ticks is not None:
            out[(pid, tid)] = ticks
    return out


def rss_kib(pid):
    for line in (read(f"/proc/{pid}/status") or "").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def fd_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def fd_limit(pid):
    for line in (read(f"/proc/{pid}/limits") or "").splitlines():
        if line.startswith("Max open files"):
            soft = line.split()[3]
            return None if soft == "unlimited" else int(soft)
    return None


def machine_ticks():
    fields = [int(x) for x in read("/proc/stat").splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields[:8]), idle


def redis_info(port, fields):
    """{field: int} of INFO's lines FIELD:VALUE (cmdstat_X lines: their calls=), or {} on failure."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"INFO everything\r\n")
            data = b""
            while b"\r\n" not in data or len(data) < data.index(b"\r\n") + 4 + int(data[1:data.index(b"\r\n")]):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        out = {}
        for line in data.decode().splitlines():
            key, _, value = line.partition(":")
            if key in fields:
                out[key] = int(value.split("calls=")[1].split(",")[0]) if "calls=" in value else int(value)
        return out
    except (OSError, ValueError, IndexError):
        return {}


def scrape(url, names, timeout=1):
    """{name: value} of the metrics NAMES, summed over their labels ({} when not answered)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            text = answer.read().decode()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        parts = line.split()
        name = parts[0].split("{")[0] if parts else ""
        if len(parts) == 2 and name in names:
            out[name] = out.get(name, 0) + float(parts[1])
    return out


class Group:
    """The PIDs of one --watch NAME: their CPU ticks at the start, and sampled peaks."""

    def __init__(self, pids):
        self.pids = pids
        self.ticks0 = {pid: stat_ticks(f"/proc/{pid}/stat") or 0 for pid in pids}
        self.threads0 = {}
        for pid in pids:
            self.threads0.update(thread_ticks(pid))
        self.threads_last = dict(self.threads0)
        self.rss_start = sum(rss_kib(pid) for pid in pids)
        self.rss_peak = self.rss_start
        self.fds_peak = sum(fd_count(pid) for pid in pids)
        limits = [fd_limit(pid) for pid in pids]
        self.fd_limit = min((x for x in limits if x), default=None)
        self.ticks_last = dict(self.ticks0)

    def sample(self):
        self.rss_peak = max(self.rss_peak, sum(rss_kib(pid) for pid in self.pids))
        self.fds_peak = max(self.fds_peak, sum(fd_count(pid) for pid in self.pids))
        for pid in self.pids:  # the last value seen: a process may be gone by the end
            ticks = stat_ticks(f"/proc/{pid}/stat")
            if ticks is not None:
                self.ticks_last[pid] = ticks
            self.threads_last.update(thread_ticks(pid))

    def report(self, wall, own_cpu_s=None):
        per_pid = {pid: (self.ticks_last[pid] - self.ticks0[pid]) / CLK_TCK for pid in self.pids}
        threads = [(t - self.threads0.get(key, 0)) / CLK_TCK for key, t in self.threads_last.items()]
        cpu = own_cpu_s if own_cpu_s is not None else sum(per_pid.values())
        return {"cpu_cores": round(cpu / wall, 3),
                "busiest_pid_cores": round(max(per_pid.values(), default=0) / wall, 3)
                if own_cpu_s is None else round(cpu / wall, 3),
                "busiest_thread_cores": round(max(threads, default=0) / wall, 3),
                "rss_start_kib": self.rss_start, "rss_peak_kib": self.rss_peak,
                "fds_peak": self.fds_peak, "fd_limit": self.fd_limit}


def main(argv):
    watch, redis_ports, metrics, interval = {}, [], None, 0.25
    i = 0
    while i < len(argv) and argv[i] != "--":
        flag, value = argv[i], argv[i + 1]
        if flag == "--watch":
            name, pids = value.split("=", 1)
            watch[name] = [int(p) for p in pids.split(",") if p]
        elif flag == "--redis":
            redis_ports = [int(p) for p in value.split(",") if p]
        elif flag == "--metrics":
            metrics = value
        elif flag == "--interval":
            interval = float(value)
        else:
            sys.exit(f"proc_probe: unknown flag {flag}")
        i += 2
    command = argv[i + 1:]
    if not command:
        sys.exit("proc_probe: no command after --")

    redis_fields = ("used_memory", "total_commands_processed", "cmdstat_evalsha")
    redis_before = [redis_info(p, redis_fields) for p in redis_ports]
    groups = {name: Group(pids) for name, pids in watch.items()}
    wanted = ("fencelock_acquires_waiting", "fencelock_http_open_connections")
    counters = ("fencelock_node_timeouts_total", "fencelock_node_disconnects_total")
    counters_before = scrape(metrics, counters, timeout=5) if metrics else {}
    peaks = {}
    busy0 = machine_ticks()
    started = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.PIPE)
    loader = Group([child.pid])
    last_scrape = 0.0
    status = None
    while status is None:
        time.sleep(interval)
        for group in list(groups.values()) + [loader]:
            group.sample()
        if metrics and time.monotonic() - last_scrape >= 1.0:
            last_scrape = time.monotonic()
            for key, value in scrape(metrics, wanted).items():
                peaks[key] = max(peaks.get(key, 0), value)
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid == 0:
            status = None
    wall = time.monotonic() - started
    busy1 = machine_ticks()
    output = child.stdout.read().decode().strip().splitlines()
    result = json.loads(output[-1]) if output else {"error": "no output"}
    total, idle = busy1[0] - busy0[0], busy1[1] - busy0[1]
    probe = {"wall_s": round(wall, 2),
             "machine_busy": round((total - idle) / total, 3) if total else None,
             "cores": os.cpu_count(),
             "procs": {name: g.report(wall) for name, g in groups.items()}}
    probe["procs"]["loader"] = loader.report(wall, usage.ru_utime + usage.ru_stime)
    if redis_ports:
        redis_after = [redis_info(p, redis_fields) for p in redis_ports]
        probe["redis_used_memory"] = {"before": [b.get("used_memory") for b in redis_before],
                                      "after": [a.get("used_memory") for a in redis_after]}
        # Per node, over the run: every command, and the scripts run by EVALSHA (acquire attempts,
        # releases, extends).
        probe["redis_commands"] = [a.get("total_commands_processed", 0) - b.get("total_commands_processed", 0)
                                   for a, b in zip(redis_after, redis_before)]
        probe["redis_evalsha"] = [a.get("cmdstat_evalsha", 0) - b.get("cmdstat_evalsha", 0)
                                  for a, b in zip(redis_after, redis_before)]
    if counters_before:
        after = scrape(metrics, counters, timeout=5)
        probe["metrics_delta"] = {key.replace("fencelock_", ""): after.get(key, 0) - value
                                  for key, value in counters_before.items()}
    if peaks:
        probe["metrics_peak"] = {key.replace("fencelock_", ""): value for key, value in peaks.items()}
    result["probe"] = probe
    print(json.dumps(result), flush=True)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
