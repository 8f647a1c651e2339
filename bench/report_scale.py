"""bench/scale.sh's rows in the side-by-side report: the section "Cost as the work grows" and its
rows of the targets table (#20). Used by bench/report.py: section(rows, md), then, inside the
targets table, targets(rows, target, md).

Every scale row carries bench/proc_probe.py's "probe": from it, first_exhausted() says which
resource ran out first. The rule, applied in this order: lock node commands that timed out
(--node-timeout) when acquires were answered 503 because of them; then a single thread at ≥ 85 % of a core
(fencelockd's busiest thread, the busiest lock node — Redis runs commands on one thread —, or the
loader's one thread) is what runs out, when the machine is also ≥ 90 % busy or that thread is at
≥ 95 %; else the machine's cores, when ≥ 90 % busy, with the biggest consumer named; else no CPU
is exhausted and the run is bound by latency (one request waits for another). Descriptors and
ports are named when ≥ 90 % of their limit is in use; memory is judged against its target.
"""

SATURATED_THREAD = 0.85  # of a core
MACHINE_BUSY = 0.9


def _num(value, digits=0):
    return "—" if value is None else f"{value:,.{digits}f}"


def _mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def _scale(rows, kind):
    return [r for r in rows if r.get("scale") == kind]


def _cpu(r, proc):
    return r.get("probe", {}).get("procs", {}).get(proc, {})


def cpu_us_per_op(r, proc):
    """µs of PROC's CPU (all its threads, or all lock nodes together) per operation of run r."""
    p = r.get("probe", {})
    if not r.get("ops") or "wall_s" not in p:
        return None
    return 1e6 * _cpu(r, proc).get("cpu_cores", 0) * p["wall_s"] / r["ops"]


def first_exhausted(r):
    """Which resource ran out first in run r (see the module comment), as a short phrase."""
    p = r.get("probe")
    if not p:
        return "not measured"
    notes = []
    busy = p.get("machine_busy") or 0
    delta = p.get("metrics_delta", {})
    if delta.get("node_timeouts_total") and r.get("unavailable"):  # a few, answered in time: noise
        notes.append(f"the lock nodes' command deadline (--node-timeout): {delta['node_timeouts_total']:,.0f} "
                     "commands timed out, each dropping its node's connection and failing what was in flight on it "
                     f"({r.get('unavailable', 0):,} acquires answered 503)")
    threads = [("fencelockd's busiest thread", _cpu(r, "fencelockd").get("busiest_thread_cores", 0)),
               ("the busiest lock node", _cpu(r, "redis").get("busiest_pid_cores", 0)),
               ("the loader's thread", _cpu(r, "loader").get("busiest_thread_cores", 0))]
    name, top = max(threads, key=lambda t: t[1])
    usage = (f"fencelockd {_cpu(r, 'fencelockd').get('cpu_cores', 0):.2f}, lock nodes "
             f"{_cpu(r, 'redis').get('cpu_cores', 0):.2f}, loader {_cpu(r, 'loader').get('cpu_cores', 0):.2f} cores")
    for proc in ("fencelockd", "loader"):
        c = _cpu(r, proc)
        if c.get("fd_limit") and c.get("fds_peak", 0) >= 0.9 * c["fd_limit"]:
            notes.append(f"{proc}'s descriptors ({c['fds_peak']:,} of {c['fd_limit']:,})")
    if top >= SATURATED_THREAD and (busy >= MACHINE_BUSY or top >= 0.95):
        verdict = f"CPU of {name} ({top:.2f} of a core; machine {100 * busy:.0f} % busy; {usage})"
    elif busy >= MACHINE_BUSY:
        verdict = (f"CPU: the machine's {p.get('cores')} cores ({100 * busy:.0f} % busy; {usage}; the rest "
                   "is others' work)")
    else:
        verdict = (f"no CPU (machine {100 * busy:.0f} % busy, busiest thread: {name} at {top:.2f} of a core; "
                   f"{usage}): latency-bound")
    return "; ".join(notes + [verdict])


def _rss_mib(kib):
    return None if kib is None else kib / 1024


DEFAULT_NODE_TIMEOUT_MS = 50


def _waiter_runs(rows, node_timeout=DEFAULT_NODE_TIMEOUT_MS):
    """{waiters: [rows]} of the waiter-count runs with this --node-timeout (None: all, keyed by
    (waiters, node timeout))."""
    out = {}
    for r in _scale(rows, "waiters"):
        timeout = r.get("node_timeout_ms", DEFAULT_NODE_TIMEOUT_MS)
        if node_timeout is None:
            out.setdefault((r["callers"], timeout), []).append(r)
        elif timeout == node_timeout:
            out.setdefault(r["callers"], []).append(r)
    return dict(sorted(out.items()))


def _waiter_baseline(waiters):
    """(callers, mean peak RSS in KiB) of the smallest waiter count of 16 or more: what one
    waiter costs is the RSS above it divided by the waiters above it."""
    counts = [n for n in waiters if n >= 16]
    if not counts:
        return None, None
    n = min(counts)
    return n, _mean([_cpu(r, "fencelockd").get("rss_peak_kib") for r in waiters[n]])


def _steady(r):
    return r.get("steady_ops_per_sec", r.get("ops_per_sec"))


def _served_ok(r):
    return (r.get("refused", 1) == 0 and r.get("callers_never_served", 1) == 0
            and r.get("unanswered_at_exit", 1) == 0 and r.get("errors", 1) == 0
            and r.get("acquire_max_ms", 1e12) < r.get("wait_ms", 0))


def _idle(rows):
    rss = next(iter(_scale(rows, "idle_rss")), None)
    ab = _scale(rows, "idle_ab")
    return rss, [r for r in ab if not r.get("beside_idle")], [r for r in ab if r.get("beside_idle")]


def section(rows, md):
    """Appends the section (nothing when the run has no scale rows)."""
    if not any(r.get("scale") for r in rows):
        return
    md.append("\n## 9. Cost as the work grows\n")
    md.append("`bench/scale.sh`: 7 redis-servers of its own (no persistence) and, for every run, a fresh "
              "fencelockd (SQLite tokens) on the first 3, 5 or 7 of them — 5 unless said otherwise — so each "
              "run's memory starts from the same point. `bench/proc_probe.py` samples every process during each "
              "run: CPU in cores (CPU time ÷ wall time; 1.00 = one core busy the whole run) of fencelockd and "
              "of its busiest thread, of the lock nodes together and of the busiest one, and of the loader "
              "(`http_bench`, one thread); RSS and descriptors; and how busy the whole machine was (others' "
              "processes included). **Runs out first** follows from those figures (`bench/report_scale.py`): a "
              "thread at ≥ 85 % of a core on a busy machine, else the machine's cores when ≥ 90 % busy, else "
              "nothing (latency-bound).\n")

    names = {}
    for r in _scale(rows, "names"):
        names.setdefault(r.get("names"), []).append(r)
    if names:
        md.append("**Working set.** Uncontended acquire → release on random names out of 10,000 vs 1,000,000 "
                  "(the order of runs alternates: A B B A). Lock node memory: `INFO memory` `used_memory`, mean "
                  "of the nodes, before → after the run (a released lock leaves nothing on a node; fencelockd "
                  "keeps the last token of at most 100,000 names in memory, the SQLite source's cache).\n")
        md.append("| names | callers | pairs/s (each run) | acquire p50 / p99 | fencelockd RSS, start → peak | "
                  "lock node memory, before → after | CPU per pair: fencelockd / lock nodes | runs out first |")
        md.append("|---:|---:|---:|---:|---:|---:|---:|---|")
        for n, rs in sorted(names.items()):
            before = _mean([_mean(r["probe"].get("redis_used_memory", {}).get("before", [])) for r in rs])
            after = _mean([_mean(r["probe"].get("redis_used_memory", {}).get("after", [])) for r in rs])
            md.append(f"| {n:,} | {rs[0]['callers']} | **{_num(_mean([r['ops_per_sec'] for r in rs]))}** "
                      f"({', '.join(_num(r['ops_per_sec']) for r in rs)}) | "
                      f"{_num(_mean([r['p50_ms'] for r in rs]), 2)} / {_num(_mean([r['p99_ms'] for r in rs]), 2)} ms | "
                      f"{_num(_rss_mib(_mean([_cpu(r, 'fencelockd').get('rss_start_kib') for r in rs])), 1)} → "
                      f"{_num(_rss_mib(_mean([_cpu(r, 'fencelockd').get('rss_peak_kib') for r in rs])), 1)} MiB | "
                      f"{_num(before and before / 1024 / 1024, 2)} → {_num(after and after / 1024 / 1024, 2)} MiB | "
                      f"{_num(_mean([cpu_us_per_op(r, 'fencelockd') for r in rs]))} / "
                      f"{_num(_mean([cpu_us_per_op(r, 'redis') for r in rs]))} µs | {first_exhausted(rs[-1])} |")

    waiters = _waiter_runs(rows, None)
    if waiters:
        md.append("\n**Waiters on one name.** N callers on one name, each on its own connection, `wait_ms` 30 s, "
                  "no hold: a grant is released at once and the caller queues again at the back. Hand-offs/s is "
                  "counted once every caller has sent its first acquire (the ramp: N connections opening); "
                  "*never served* = callers without a grant by the end, *gave up* = acquires answered 409 after "
                  "their `wait_ms`, *unanswered* = still waiting when the loader stopped; *longest wait* = the "
                  "longest acquire; *503 answers*: acquires answered `unavailable` (too few lock nodes answered "
                  "in time; the loader waits 100 ms before asking again); *lock node commands per hand-off*: "
                  "commands each node processed during the run (`INFO stats`) ÷ grants. Per waiter: fencelockd's peak RSS above the 16-waiter run's, divided by the "
                  "peak of waiting acquires above 16 (`fencelock_acquires_waiting`; each waiter on its own "
                  "connection: the connection is included).\n")
        md.append("| waiters | run | hand-offs/s | hand-off p50 / p99 | longest wait | never served / gave up / "
                  "unanswered | 503 answers | ramp | waiting (peak) | lock node commands per hand-off | "
                  "fencelockd RSS, start → peak | per waiter | runs out first |")
        md.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        base_n, base_peak = _waiter_baseline(_waiter_runs(rows))
        for (n, timeout), rs in waiters.items():
            label = f"{n:,}" + ("" if timeout == DEFAULT_NODE_TIMEOUT_MS else f" (--node-timeout {timeout:,} ms)")
            for i, r in enumerate(rs, 1):
                fl = _cpu(r, "fencelockd")
                queued = r.get("probe", {}).get("metrics_peak", {}).get("acquires_waiting") or n
                per = ((fl.get("rss_peak_kib", 0) - base_peak) * 1024 / (queued - base_n)
                       if fl and base_peak is not None and queued >= 10 * base_n else None)
                grants = r.get("ops", 0) + r.get("served_after_end", 0)
                commands = _mean(r.get("probe", {}).get("redis_commands", []))
                md.append(f"| {label} | {i} | **{_num(_steady(r))}** | {_num(r.get('handoff_p50_ms'), 2)} / "
                          f"{_num(r.get('handoff_p99_ms'), 2)} ms | {_num(r.get('acquire_max_ms'), 0)} ms | "
                          f"{r.get('callers_never_served', '—'):,} / {r.get('refused', '—')} / "
                          f"{r.get('unanswered_at_exit', '—')} | {r.get('unavailable', 0):,} | "
                          f"{_num(r.get('ramp_ms'), 0) + ' ms' if r.get('ramp_ms') is not None else 'not reached'} | "
                          f"{_num(r.get('probe', {}).get('metrics_peak', {}).get('acquires_waiting'))} | "
                          f"{_num(commands / grants if commands and grants else None, 1)} | "
                          f"{_num(_rss_mib(fl.get('rss_start_kib')), 1)} → {_num(_rss_mib(fl.get('rss_peak_kib')), 1)} MiB | "
                          f"{_num(per) + ' B' if per is not None else '—'} | {first_exhausted(r)} |")

    rss, without, beside = _idle(rows)
    if rss:
        n = rss["connections"]
        per = (rss["rss_kib"] - rss["rss_before_kib"]) * 1024 / n if n else None
        md.append(f"\n**Idle keep-alive connections.** A second loader opens {rss['wanted']:,} connections, sends "
                  f"`GET /healthz` on each and keeps them open: {n:,} open, fencelockd RSS "
                  f"{_num(_rss_mib(rss['rss_before_kib']), 1)} → **{_num(_rss_mib(rss['rss_kib']), 1)} MiB**, "
                  f"**{_num(per)} B per connection**; fencelockd descriptors {rss['fds']:,} of {rss['fd_limit']} "
                  f"(its open-file limit; `--max-connections` 15,000 here, default 10,000), the idle loader "
                  f"{_num(_rss_mib(rss['loader_rss_kib']), 1)} MiB and {rss['loader_fds']:,} descriptors, "
                  f"{n:,} of the {rss['ephemeral_ports']:,} loopback ephemeral ports to one address.\n")
    if without and beside:
        md.append("Beside them, an active client: uncontended acquire → release at 16 callers, run without the "
                  "idle connections, beside them twice, without again (means of each side):\n")
        md.append("| | pairs/s (each run) | acquire p50 | acquire p99 (each run) | fencelockd CPU per pair | "
                  "runs out first |")
        md.append("|---|---:|---:|---:|---:|---|")
        for label, rs in (("without idle connections", without), (f"beside {beside[0]['beside_idle']:,} idle", beside)):
            md.append(f"| {label} | {_num(_mean([r['ops_per_sec'] for r in rs]))} "
                      f"({', '.join(_num(r['ops_per_sec']) for r in rs)}) | {_num(_mean([r['p50_ms'] for r in rs]), 2)} ms | "
                      f"**{_num(_mean([r['p99_ms'] for r in rs]), 2)} ms** ({', '.join(_num(r['p99_ms'], 2) for r in rs)}) | "
                      f"{_num(_mean([cpu_us_per_op(r, 'fencelockd') for r in rs]))} µs | {first_exhausted(rs[-1])} |")

    nodes = {}
    for r in _scale(rows, "nodes"):
        nodes.setdefault(r["nodes"], []).append(r)
    if nodes:
        md.append("\n**Lock nodes.** Uncontended acquire → release, the same fencelockd setup on the first 3, 5 "
                  "or 7 lock nodes (order 3 5 7 7 5 3). Every node sees every operation; a grant needs a "
                  "majority.\n")
        md.append("| lock nodes | callers | pairs/s (each run) | acquire p50 / p99 | CPU per pair: fencelockd / lock "
                  "nodes | runs out first |")
        md.append("|---:|---:|---:|---:|---:|---|")
        for k, rs in sorted(nodes.items()):
            md.append(f"| {k} | {rs[0]['callers']} | **{_num(_mean([r['ops_per_sec'] for r in rs]))}** "
                      f"({', '.join(_num(r['ops_per_sec']) for r in rs)}) | "
                      f"{_num(_mean([r['p50_ms'] for r in rs]), 2)} / {_num(_mean([r['p99_ms'] for r in rs]), 2)} ms | "
                      f"{_num(_mean([cpu_us_per_op(r, 'fencelockd') for r in rs]))} / "
                      f"{_num(_mean([cpu_us_per_op(r, 'redis') for r in rs]))} µs | {first_exhausted(rs[-1])} |")


def targets(rows, target, md):
    """The targets-table rows: target(text, measured, ok) for the issue's targets, informational
    rows (met "—") for the measurements that have none."""
    waiters = _waiter_runs(rows)
    if waiters:
        most = max(waiters)
        ref = waiters.get(16)
        big = waiters[most]
        if ref and most > 16:
            a, b = _mean([_steady(r) for r in big]), _mean([_steady(r) for r in ref])
            target(f"{most:,} waiters on one name: hand-offs/s within 20 % of 16 waiters (no hold; A/B in this run)",
                   f"{_num(a)} vs {_num(b)}: **{100 * a / b:.1f} %**" + ("" if a >= 0.8 * b else
                                                                        f"; runs out first: {first_exhausted(big[-1])}"),
                   a >= 0.8 * b)
        peak = max(_cpu(r, "fencelockd").get("rss_peak_kib", 0) for r in big)
        target(f"{most:,} waiters on one name: fencelockd RSS ≤ 256 MiB", f"{peak / 1024:.1f} MiB (peak)",
               peak <= 256 * 1024)
        cells, all_ok = [], True
        for n, rs in waiters.items():
            all_ok = all_ok and all(_served_ok(r) for r in rs)
            cells.append(f"{n:,}: longest wait {_num(max(r.get('acquire_max_ms', 0) for r in rs), 0)} ms, never served "
                         f"{sum(r.get('callers_never_served', 0) for r in rs)}, gave up "
                         f"{sum(r.get('refused', 0) for r in rs)}, unanswered "
                         f"{sum(r.get('unanswered_at_exit', 0) for r in rs)}, errors {sum(r.get('errors', 0) for r in rs)}")
        wait_s = max(r.get("wait_ms", 0) for rs in waiters.values() for r in rs) / 1000
        target(f"{', '.join(f'{n:,}' for n in waiters)} waiters on one name: nobody starved — every waiter served "
               f"within its wait_ms ({wait_s:.0f} s)", "; ".join(cells), all_ok)
    rss, without, beside = _idle(rows)
    if rss:
        target(f"{rss['wanted']:,} idle keep-alive connections: fencelockd RSS ≤ 128 MiB",
               f"{rss['rss_kib'] / 1024:.1f} MiB with {rss['connections']:,} open "
               f"({(rss['rss_kib'] - rss['rss_before_kib']) * 1024 / max(rss['connections'], 1):,.0f} B each)",
               rss["rss_kib"] <= 128 * 1024 and rss["connections"] >= rss["wanted"])
    if without and beside:
        a, b = _mean([r["p99_ms"] for r in beside]), _mean([r["p99_ms"] for r in without])
        target(f"{beside[0]['beside_idle']:,} idle connections: an active client's acquire p99 (16 callers) unchanged "
               "within 20 % (A/B in this run)",
               f"{a:.2f} vs {b:.2f} ms: **{100 * a / b:.1f} %**" + ("" if a <= 1.2 * b else
                                                                   f"; runs out first: {first_exhausted(beside[-1])}"),
               a <= 1.2 * b)
    names = {}
    for r in _scale(rows, "names"):
        names.setdefault(r.get("names"), []).append(r)
    if len(names) >= 2:
        cells = [f"{n:,} names: {_num(_mean([r['ops_per_sec'] for r in rs]))} pairs/s, p99 "
                 f"{_num(_mean([r['p99_ms'] for r in rs]), 2)} ms" for n, rs in sorted(names.items())]
        last = names[max(names)]
        after = _mean([_mean(r["probe"].get("redis_used_memory", {}).get("after", [])) for r in last])
        md.append(f"| working set ({' vs '.join(f'{n:,}' for n in sorted(names))} names, uncontended, "
                  f"{last[0]['callers']} callers): not a target | {'; '.join(cells)}; lock node memory after "
                  f"{_num(after and after / 1024 / 1024, 2)} MiB each; runs out first: {first_exhausted(last[-1])} | — |")
    nodes = {}
    for r in _scale(rows, "nodes"):
        nodes.setdefault(r["nodes"], []).append(r)
    if nodes:
        cells = [f"{k}: {_num(_mean([r['ops_per_sec'] for r in rs]))} pairs/s, p99 "
                 f"{_num(_mean([r['p99_ms'] for r in rs]), 2)} ms" for k, rs in sorted(nodes.items())]
        most = nodes[max(nodes)]
        md.append(f"| {' vs '.join(str(k) for k in sorted(nodes))} lock nodes (uncontended, {most[0]['callers']} "
                  f"callers): not a target | {'; '.join(cells)}; runs out first at {max(nodes)}: "
                  f"{first_exhausted(most[-1])} | — |")
