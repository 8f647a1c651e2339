#!/usr/bin/python3
"""ZooKeeper peer benchmark: ZooKeeper's standard lock recipe through Debian's python3-kazoo (2.8,
its `Lock`), the way a Python application would lock with ZooKeeper. Run it with Debian's
/usr/bin/python3, which is where python3-kazoo installs.

  bench.py --hosts 127.0.0.1:P[,...] --workload uncontended|contended --callers N --seconds S
           [--system zookeeper] [--names 10000] [--hold-ms 1] [--processes K] [--drain-s 10]

The recipe (kazoo.recipe.lock.Lock): acquire = make sure the lock's parent node exists, create an
ephemeral sequential child, list the children, and while a lower-numbered child exists, watch the
one just below ours, wait for its deletion and list again; release = delete our child. No polling, and the waiters
are served in the order of their sequence numbers. A holder keeps the lock as long as its session
lives; there is no ttl.

Every caller is one ZooKeeper session (one KazooClient, one TCP connection), as an application
instance would be; a client picks one of --hosts at random. Callers are spread over --processes
worker processes (default: one per 16 callers, at most 4), each running one thread per caller,
because one CPython process is GIL-bound well before 64 callers.

uncontended: N callers in a closed loop, each pair (acquire + release) on a random name out of
  --names, with a new Lock object per pair (what `with zk.Lock(path):` does). ops = pairs completed
  inside the window; pair_* = acquire + release.
contended: N callers on one name, each with one Lock object it reuses: acquire (queue), hold
  --hold-ms, release, repeat. ops = hand-offs: acquisitions following a previous holder's release,
  in grant order (merged over the processes on the system-wide monotonic clock). Hand-off latency =
  this acquire's return - the previous holder's release return (clamped at 0, as the two race). An
  acquire that returns before the previous holder even started its release would be a mutual
  exclusion violation and counts as an error; so does a lock node whose sequence number (the
  recipe's per-lock fencing token) is not above the previous holder's.

Warm-up: before the window each caller connects its session and does one acquire + release on a
name of its own (not counted), as the Redlock peer's driver does. Time bound: at --seconds no new
pair starts; callers still queued acquire and release in turn (not counted); whatever still waits
--drain-s seconds later is cancelled; a worker still busy 5 s after that is killed and its callers
count as errors. Rates are divided by --seconds; percentiles are exact (nearest rank).

Output: one JSON line on stdout, the shape of bench/peers/etcd/bench.js's (README.md there), with
"client" and "processes" added; diagnostics on stderr.
"""
import argparse
import json
import math
import multiprocessing as mp
import os
import random
import sys
import threading
import time
import uuid

from kazoo.client import KazooClient
from kazoo.recipe.lock import Lock

now = time.monotonic  # CLOCK_MONOTONIC: one clock for all the worker processes


def parse_args():
    p = argparse.ArgumentParser(description="ZooKeeper lock benchmark (kazoo's Lock recipe)")
    p.add_argument("--hosts", required=True, help="127.0.0.1:PORT[,127.0.0.1:PORT...]")
    p.add_argument("--workload", required=True, choices=("uncontended", "contended"))
    p.add_argument("--callers", type=int, default=16)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--system", default="zookeeper", help='the "system" of the JSON line')
    p.add_argument("--names", type=int, default=10000)
    p.add_argument("--hold-ms", type=float, default=1.0)
    p.add_argument("--processes", type=int, default=0, help="worker processes (0: one per 16 callers, at most 4)")
    p.add_argument("--drain-s", type=float, default=10.0)
    p.add_argument("--session-timeout-s", type=float, default=10.0)
    p.add_argument("--server-pids", default="", help="PID[,PID...] of the servers: adds their CPU per op")
    a = p.parse_args()
    if a.callers < 1 or a.seconds <= 0 or a.names < 1 or a.hold_ms < 0 or a.drain_s < 0:
        p.error("--callers, --seconds and --names must be positive, --hold-ms and --drain-s not negative")
    if a.processes <= 0:
        a.processes = min(4, math.ceil(a.callers / 16))
    a.processes = min(a.processes, a.callers)
    return a


def sequence_number(node):
    """The 10-digit counter ZooKeeper appends to a sequential node's name."""
    return int(node[-10:])


def worker(opts, callers, prefix, ready, go, start_at, results):
    """One worker process: `callers` threads, one session each. Sends one dict to `results`."""
    out = {"acquire_ms": [], "pair_ms": [], "holds": [], "errors": {}, "version": None}
    lock_out = threading.Lock()

    def note_error(e):
        with lock_out:
            k = type(e).__name__ + (f": {e}" if str(e) else "")
            out["errors"][k] = out["errors"].get(k, 0) + 1

    clients = []
    try:
        for _ in range(callers):
            c = KazooClient(hosts=opts.hosts, timeout=opts.session_timeout_s)
            c.start(timeout=15)
            clients.append(c)
        out["version"] = clients[0].command(b"srvr").split("\n")[0].replace("Zookeeper version: ", "").split("-")[0]
        for c in clients:  # warm-up: one pair each, on a name of its own
            with c.Lock(f"{prefix}warm-up/{uuid.uuid4().hex}"):
                pass
    except Exception as e:  # noqa: BLE001 — reported, then the run fails
        ready.put(f"{type(e).__name__}: {e}")
        return
    ready.put(None)
    go.wait()
    cpu_start = time.process_time()
    deadline = start_at.value + opts.seconds
    drain_end = deadline + opts.drain_s
    contended = opts.workload == "contended"

    def caller(client):
        lock = Lock(client, f"{prefix}the-lock") if contended else None
        time.sleep(max(0.0, start_at.value - now()))
        while now() < deadline:
            if not contended:
                lock = Lock(client, f"{prefix}name-{random.randrange(opts.names)}")
            t_start = now()
            try:
                if not lock.acquire(timeout=max(0.001, drain_end - t_start)):
                    break  # still queued after the drain budget
            except Exception as e:  # noqa: BLE001
                note_error(e)
                time.sleep(0.01)
                continue
            t_acq = now()
            hold = None
            if contended:
                hold = [t_acq, None, None, t_acq <= deadline, sequence_number(lock.node)]
                if opts.hold_ms > 0 and t_acq <= deadline:
                    time.sleep(opts.hold_ms / 1000)
                hold[1] = now()
            try:
                lock.release()
            except Exception as e:  # noqa: BLE001
                note_error(e)
                continue
            t_end = now()
            with lock_out:
                if contended:
                    hold[2] = t_end
                    out["holds"].append(hold)
                    if hold[3]:
                        out["acquire_ms"].append((t_acq - t_start) * 1000)
                elif t_end <= deadline:
                    out["acquire_ms"].append((t_acq - t_start) * 1000)
                    out["pair_ms"].append((t_end - t_start) * 1000)

    threads = [threading.Thread(target=caller, args=(c,), daemon=True) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out["cpu_s"] = time.process_time() - cpu_start
    for c in clients:
        try:
            c.stop()
            c.close()
        except Exception:  # noqa: BLE001 — the session ends with the process anyway
            pass
    results.put(out)


def cpu_ticks(pids):
    """utime + stime of PIDS from /proc, in clock ticks (0 for a pid that is gone)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total


def pct(sorted_values, p):
    if not sorted_values:
        return None
    rank = math.ceil(p * len(sorted_values))
    return sorted_values[min(len(sorted_values), max(1, rank)) - 1]


def ms3(x):
    return None if x is None else round(x, 3)


def main():
    opts = parse_args()
    prefix = f"/fencelock-bench/{uuid.uuid4().hex[:8]}/"
    ctx = mp.get_context("fork")
    ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    start_at = ctx.Value("d", 0.0)
    shares = [opts.callers // opts.processes + (1 if i < opts.callers % opts.processes else 0)
              for i in range(opts.processes)]
    procs = [ctx.Process(target=worker, args=(opts, n, prefix, ready, go, start_at, results), daemon=True)
             for n in shares]
    for p in procs:
        p.start()
    for _ in procs:
        failure = ready.get(timeout=60)
        if failure:
            print(f"bench.py: a worker could not connect or warm up: {failure}", file=sys.stderr)
            for p in procs:
                p.kill()
            sys.exit(1)
    server_pids = [p for p in opts.server_pids.split(",") if p]
    ticks_at_start = cpu_ticks(server_pids)
    start_at.value = now() + 0.05
    go.set()
    outs, errors = [], 0
    hard_end = start_at.value + opts.seconds + opts.drain_s + 5
    for _ in procs:
        try:
            outs.append(results.get(timeout=max(0.1, hard_end - now())))
        except Exception:  # noqa: BLE001 — queue.Empty: a worker is still busy at the hard stop
            break
    if len(outs) < len(procs):
        print(f"bench.py: {len(procs) - len(outs)} workers still busy at the hard stop; killing them", file=sys.stderr)
        for p in procs:
            p.kill()
        errors += sum(shares[len(outs):])
    ticks = cpu_ticks(server_pids) - ticks_at_start
    for p in procs:
        p.join(timeout=5)

    acquire = sorted(x for o in outs for x in o["acquire_ms"])
    kinds = {}
    for o in outs:
        for k, n in o["errors"].items():
            kinds[k] = kinds.get(k, 0) + n
    errors += sum(kinds.values())
    version = next((o["version"] for o in outs if o["version"]), None)
    row = {"system": opts.system, "version": version, "client": "kazoo 2.8", "workload": opts.workload,
           "callers": opts.callers, "seconds": float(opts.seconds), "processes": opts.processes}
    if opts.workload == "contended":
        holds = sorted((h for o in outs for h in o["holds"]), key=lambda h: h[0])
        handoff, violations, regressions, overlap = [], 0, 0, 0
        for prev, cur in zip(holds, holds[1:]):
            if cur[0] < prev[1]:
                violations += 1
            if cur[4] <= prev[4]:
                regressions += 1
            if cur[3]:
                d = (cur[0] - prev[2]) * 1000
                overlap += d < 0
                handoff.append(max(0.0, d))
        handoff.sort()
        if violations:
            print(f"bench.py: {violations} MUTUAL EXCLUSION VIOLATIONS (acquired before the previous holder released)",
                  file=sys.stderr)
        if regressions:
            print(f"bench.py: {regressions} lock nodes not numbered above their predecessor's", file=sys.stderr)
        if overlap:
            print(f"bench.py: {overlap} hand-offs saw the next acquire before the release returned (clamped to 0)",
                  file=sys.stderr)
        errors += violations + regressions
        row.update(ops=len(handoff), ops_per_sec=round(len(handoff) / opts.seconds, 1),
                   p50_ms=ms3(pct(acquire, 0.5)), p90_ms=ms3(pct(acquire, 0.9)), p99_ms=ms3(pct(acquire, 0.99)),
                   p999_ms=ms3(pct(acquire, 0.999)), errors=errors,
                   handoff_p50_ms=ms3(pct(handoff, 0.5)), handoff_p90_ms=ms3(pct(handoff, 0.9)),
                   handoff_p99_ms=ms3(pct(handoff, 0.99)))
    else:
        pairs = sorted(x for o in outs for x in o["pair_ms"])
        row.update(ops=len(pairs), ops_per_sec=round(len(pairs) / opts.seconds, 1),
                   p50_ms=ms3(pct(acquire, 0.5)), p90_ms=ms3(pct(acquire, 0.9)), p99_ms=ms3(pct(acquire, 0.99)),
                   p999_ms=ms3(pct(acquire, 0.999)), errors=errors,
                   pair_p50_ms=ms3(pct(pairs, 0.5)), pair_p99_ms=ms3(pct(pairs, 0.99)))
    # CPU per op from the go signal to the end of the drain (the drain's ops are not counted).
    ops = max(row["ops"], 1)
    row["client_cpu_ms_per_op"] = round(1000 * sum(o.get("cpu_s", 0) for o in outs) / ops, 3)
    if server_pids:
        row["server_cpu_ms_per_op"] = round(1000 * ticks / os.sysconf("SC_CLK_TCK") / ops, 3)
    for k, n in kinds.items():
        print(f"bench.py: error x{n}: {k}", file=sys.stderr)
    print(f"bench.py: done in {now() - start_at.value:.2f} s (window {opts.seconds} s, {opts.processes} processes)",
          file=sys.stderr)
    print(json.dumps(row, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
