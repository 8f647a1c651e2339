#!/usr/bin/env node
// etcd peer benchmark: etcd 3.4's lock service (v3lock) through its gRPC-gateway JSON API, the way an
// HTTP client of etcd would use it. Plain Node (http with a keep-alive Agent), no dependencies.
//
//   node bench.js --endpoint http://127.0.0.1:12379 --workload uncontended|contended \
//                 --callers N --seconds S [--names 10000] [--ttl-s 10] [--hold-ms 1] [--drain-s 10]
//
// One acquire+release pair is: POST /v3/lease/grant {TTL} -> ID; POST /v3/lock/lock {name, lease}
// -> key (acquire latency = grant + lock); POST /v3/lock/unlock {key}; POST /v3/lease/revoke {ID}.
// Lease IDs are int64 and are kept as the strings the gateway returns (they exceed 2^53).
//
// uncontended: N callers in a closed loop, each pair on a random name out of --names. etcd's lock
//   blocks until acquired, so a caller that picks a name another caller holds waits for it.
// contended: N callers on one name; each grants, locks (queues), holds --hold-ms, unlocks, revokes,
//   repeats. ops = hand-offs: acquisitions that follow a previous holder's release, in the order the
//   locks were granted. Hand-off latency = this lock response's arrival - the previous holder's
//   unlock response's arrival (clamped at 0: the two responses race on the wire). A lock granted
//   before the previous holder even sent its unlock would be a mutual-exclusion violation and counts
//   as an error.
//
// Time bound: at --seconds no new pair starts. Pairs in flight finish, and callers queued in lock
// drain in turn (acquire, release at once, not counted) instead of being cancelled, because a burst
// of cancelled waiters on one name wedges etcd 3.4's lock service until restart (etcd-io/etcd#13336).
// Whatever still waits --drain-s (10) seconds later is cancelled: lock request aborted, lease
// revoked. Anything still busy 5 s after that is abandoned. Only pairs (uncontended) or acquisitions
// (contended) completed within the window are counted, and rates are divided by --seconds.
// Percentiles are exact (nearest rank over all sorted samples).
//
// Output: one JSON line on stdout (see README.md); diagnostics go to stderr.
'use strict';

const http = require('http');
const crypto = require('crypto');

function parseArgs(argv) {
  const opts = { endpoint: 'http://127.0.0.1:12379', workload: null, callers: 16, seconds: 5,
    names: 10000, ttlS: null, holdMs: 1, drainS: 10 };
  const num = (flag, v, min) => {
    const n = Number(v);
    if (v === undefined || !Number.isFinite(n) || n < min) die(`${flag} needs a number >= ${min}`);
    return n;
  };
  for (let i = 2; i < argv.length; i++) {
    const a = argv[i];
    const v = argv[i + 1];
    switch (a) {
      case '--endpoint': opts.endpoint = v; i++; break;
      case '--workload': opts.workload = v; i++; break;
      case '--callers': opts.callers = Math.floor(num(a, v, 1)); i++; break;
      case '--seconds': opts.seconds = num(a, v, 0.1); i++; break;
      case '--names': opts.names = Math.floor(num(a, v, 1)); i++; break;
      case '--ttl-s': opts.ttlS = Math.floor(num(a, v, 1)); i++; break;
      case '--hold-ms': opts.holdMs = num(a, v, 0); i++; break;
      case '--drain-s': opts.drainS = num(a, v, 0); i++; break;
      case '-h': case '--help': usage(0); break;
      default: die(`unknown argument ${a}`);
    }
  }
  if (opts.workload !== 'uncontended' && opts.workload !== 'contended') die('--workload must be uncontended or contended');
  if (!opts.endpoint || !/^http:\/\//.test(opts.endpoint)) die('--endpoint must be an http:// URL');
  if (opts.ttlS === null) {
    // A queued waiter's lease is not kept alive by the gateway's Lock (it orphans its session), so it
    // must outlive the longest possible wait, which is the whole window in the contended workload.
    opts.ttlS = opts.workload === 'contended' ? Math.max(10, Math.ceil(opts.seconds + opts.drainS) + 5) : 10;
  } else if (opts.workload === 'contended' && opts.ttlS <= opts.seconds) {
    process.stderr.write(`bench: warning: --ttl-s ${opts.ttlS} <= --seconds; queued waiters' leases may expire\n`);
  }
  return opts;
}
function usage(code) {
  process.stderr.write('usage: node bench.js --endpoint http://127.0.0.1:12379 --workload uncontended|contended ' +
    '--callers N --seconds S [--names 10000] [--ttl-s 10] [--hold-ms 1] [--drain-s 10]\n');
  process.exit(code);
}
function die(msg) { process.stderr.write(`bench: ${msg}\n`); usage(2); }

const opts = parseArgs(process.argv);
const base = new URL(opts.endpoint);
const agent = new http.Agent({ keepAlive: true, maxSockets: opts.callers, maxFreeSockets: opts.callers });
const now = () => performance.now();
const b64 = (s) => Buffer.from(s).toString('base64');

// post(path, body, track): resolves with the parsed JSON body; rejects on transport errors, non-2xx
// or a gateway error object. track (optional) receives the ClientRequest so it can be aborted.
function post(path, body, track) {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const req = http.request({
      host: base.hostname, port: base.port || 80, path, method: 'POST', agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        let json;
        try { json = JSON.parse(Buffer.concat(chunks).toString('utf8')); } catch (e) {
          return reject(new Error(`${path}: HTTP ${res.statusCode}, unparsable body`));
        }
        if (res.statusCode < 200 || res.statusCode > 299 || json.error !== undefined || json.code !== undefined) {
          return reject(new Error(`${path}: HTTP ${res.statusCode} ${json.error || json.message || ''}`));
        }
        resolve(json);
      });
    });
    req.on('error', reject);
    // A request destroyed mid-response may emit neither 'end' nor 'error': settle it anyway
    // (rejecting after a resolve is a no-op).
    req.on('close', () => reject(new Error(`${path}: connection closed`)));
    if (track) track(req);
    req.end(payload);
  });
}
async function get(path) {
  return new Promise((resolve, reject) => {
    http.get({ host: base.hostname, port: base.port || 80, path, agent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => { try { resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))); } catch (e) { reject(e); } });
      res.on('error', reject);
    }).on('error', reject);
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Exact percentile, nearest rank, over an ascending array; null when there are no samples.
function pct(sorted, p) {
  if (sorted.length === 0) return null;
  const rank = Math.ceil(p * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}
const ms3 = (x) => (x === null ? null : Math.round(x * 1000) / 1000);

// JSON with float keys always written with a decimal point (5 -> 5.0), as the peers' outputs are.
function emit(obj, floatKeys) {
  const parts = Object.entries(obj).map(([k, v]) => {
    let s = JSON.stringify(v);
    if (floatKeys.has(k) && typeof v === 'number' && Number.isInteger(v)) s = v.toFixed(1);
    return `${JSON.stringify(k)}:${s}`;
  });
  process.stdout.write(`{${parts.join(',')}}\n`);
}

async function main() {
  let version;
  try {
    version = (await get('/version')).etcdserver;
  } catch (e) {
    process.stderr.write(`bench: cannot reach ${opts.endpoint}/version: ${e.message}\n`);
    process.exit(1);
  }
  if (!/^3\.4\./.test(version)) process.stderr.write(`bench: warning: etcd ${version}, this benchmark targets 3.4's gateway\n`);

  const runId = crypto.randomBytes(4).toString('hex');
  const prefix = `fencelock-bench/${runId}/`;
  const contended = opts.workload === 'contended';
  const windowMs = opts.seconds * 1000;

  let errors = 0;
  const errorKinds = new Map();
  const noteError = (e) => {
    errors++;
    const k = e && e.message ? e.message.replace(/[0-9]{6,}/g, 'N') : String(e);
    errorKinds.set(k, (errorKinds.get(k) || 0) + 1);
  };

  const acquireMs = [];  // grant + lock, for pairs counted
  const pairMs = [];     // grant .. revoke done (uncontended)
  // contended: acquisitions in lock-grant order: {acq, unlockSent, unlockDone, inWindow}
  const holds = [];
  let violations = 0;

  let stopping = false;      // window over: start nothing new
  const callers = [];        // per caller: {lockReq, leaseId, phase}

  const t0 = now();
  const deadline = t0 + windowMs;

  const pendingRevokes = new Set();
  function revokeQuietly(id) {
    const p = post('/v3/lease/revoke', { ID: id }).catch(() => { /* already gone or shutting down */ });
    pendingRevokes.add(p);
    p.finally(() => pendingRevokes.delete(p));
    return p;
  }

  async function callerLoop(c, idx) {
    while (!stopping) {
      const name = contended ? `${prefix}the-lock` : `${prefix}name-${crypto.randomInt(opts.names)}`;
      const tStart = now();
      c.leaseId = null;
      c.phase = 'grant';
      let hold = null;
      try {
        const g = await post('/v3/lease/grant', { TTL: opts.ttlS });
        c.leaseId = g.ID;
        if (stopping) { await revokeQuietly(c.leaseId); c.leaseId = null; break; }
        c.phase = 'lock';
        const l = await post('/v3/lock/lock', { name: b64(name), lease: c.leaseId }, (req) => { c.lockReq = req; });
        c.lockReq = null;
        const tAcq = now();
        if (c.aborted) break; // response raced the abort at the deadline
        if (contended) {
          hold = { acq: tAcq, unlockSent: null, unlockDone: null, inWindow: tAcq <= deadline };
          const prev = holds[holds.length - 1];
          if (prev && prev.unlockSent === null) violations++;
          holds.push(hold);
        }
        c.phase = 'hold';
        if (contended && opts.holdMs > 0 && !stopping) await sleep(opts.holdMs);
        c.phase = 'unlock';
        if (hold) hold.unlockSent = now();
        await post('/v3/lock/unlock', { key: l.key });
        if (hold) hold.unlockDone = now();
        c.phase = 'revoke';
        await post('/v3/lease/revoke', { ID: c.leaseId });
        c.leaseId = null;
        const tEnd = now();
        if (contended) {
          if (hold.inWindow) acquireMs.push(tAcq - tStart);
        } else if (tEnd <= deadline) {
          acquireMs.push(tAcq - tStart);
          pairMs.push(tEnd - tStart);
        }
      } catch (e) {
        c.lockReq = null;
        if (c.aborted) break;
        if (hold && hold.unlockSent === null) hold.unlockSent = now(); // don't flag the next holder
        noteError(e);
        if (c.leaseId) { await revokeQuietly(c.leaseId); c.leaseId = null; }
        await sleep(10); // don't spin on a failing server
      }
    }
    c.phase = 'done';
  }

  for (let i = 0; i < opts.callers; i++) callers.push({ lockReq: null, leaseId: null, phase: 'init', aborted: false });
  const loops = callers.map((c, i) => callerLoop(c, i));

  // At the deadline: start nothing new. Callers queued in lock are NOT cancelled: etcd 3.4 wedges its
  // lock service for good when many waiters on one name cancel at once (etcd-io/etcd#13336: the
  // in-process watch stream behind v3lock deadlocks; every later contended lock call hangs until
  // etcd restarts). So the queue drains in turn (each waiter acquires, releases at once, is not
  // counted), which takes about callers x hand-off time.
  const stopTimer = setTimeout(() => {
    stopping = true;
    if (process.env.BENCH_DEBUG) {
      const phases = {};
      for (const c of callers) phases[c.phase] = (phases[c.phase] || 0) + 1;
      process.stderr.write(`bench: phases at the deadline ${JSON.stringify(phases)}; acquisitions ${holds.length}\n`);
    }
  }, windowMs);
  // Drain budget over: cancel what still waits (abort the lock request, revoke its lease).
  let cancelled = 0;
  const drainTimer = setTimeout(() => {
    for (const c of callers) {
      if (c.phase === 'lock' && c.lockReq) {
        cancelled++;
        c.aborted = true;
        c.lockReq.destroy();
        c.lockReq = null;
        if (c.leaseId) { const id = c.leaseId; c.leaseId = null; revokeQuietly(id); }
      }
    }
    if (cancelled) {
      process.stderr.write(`bench: ${cancelled} callers still queued ${opts.drainS} s after the window; cancelled them ` +
        '(many at once can wedge etcd 3.4\'s lock service, etcd-io/etcd#13336: restart etcd if later runs stall)\n');
    }
  }, windowMs + opts.drainS * 1000);
  // Hard bound: whatever still runs 5 s after that is abandoned.
  let hardStopped = false;
  const hardTimer = setTimeout(() => {
    hardStopped = true;
    process.stderr.write('bench: callers still busy 5 s after cancelling; abandoning them\n');
    for (const c of callers) {
      if (c.phase !== 'done') {
        errors++;
        c.aborted = true;
        if (c.lockReq) c.lockReq.destroy();
        if (c.leaseId) revokeQuietly(c.leaseId);
        c.phase = 'done';
      }
    }
    finish();
  }, windowMs + opts.drainS * 1000 + 5000);

  let finished = false;
  async function finish() {
    if (finished) return;
    finished = true;
    clearTimeout(stopTimer);
    clearTimeout(drainTimer);
    clearTimeout(hardTimer);
    // Let cancellation revokes finish (2 s at most), without a timer that keeps the process alive.
    let revokeTimer;
    await Promise.race([Promise.all([...pendingRevokes]),
      new Promise((r) => { revokeTimer = setTimeout(r, 2000); })]);
    clearTimeout(revokeTimer);

    acquireMs.sort((a, b) => a - b);
    pairMs.sort((a, b) => a - b);
    const out = {
      system: 'etcd', version, workload: opts.workload, callers: opts.callers, seconds: opts.seconds,
    };
    if (contended) {
      const handoffMs = [];
      let overlap = 0;
      for (let i = 1; i < holds.length; i++) {
        if (!holds[i].inWindow || holds[i - 1].unlockDone === null) continue;
        const d = holds[i].acq - holds[i - 1].unlockDone;
        if (d < 0) overlap++;
        handoffMs.push(Math.max(0, d));
      }
      handoffMs.sort((a, b) => a - b);
      // Diagnostic only: from the previous holder sending its unlock to this grant arriving, i.e. the
      // server-side hand-off (unlock commit, watch notification, the waiter's re-check) plus one RTT.
      const fromSend = [];
      for (let i = 1; i < holds.length; i++) {
        if (holds[i].inWindow && holds[i - 1].unlockSent !== null) fromSend.push(holds[i].acq - holds[i - 1].unlockSent);
      }
      fromSend.sort((a, b) => a - b);
      if (fromSend.length) {
        process.stderr.write(`bench: unlock sent -> next grant: p50 ${ms3(pct(fromSend, 0.5))} ms, p90 ` +
          `${ms3(pct(fromSend, 0.9))} ms, p99 ${ms3(pct(fromSend, 0.99))} ms; grant-to-grant cycle ` +
          `${ms3(windowMs / Math.max(1, handoffMs.length))} ms\n`);
      }
      errors += violations;
      if (violations) process.stderr.write(`bench: ${violations} MUTUAL EXCLUSION VIOLATIONS (lock granted before the previous holder unlocked)\n`);
      if (overlap) process.stderr.write(`bench: ${overlap} hand-offs saw the next grant before the unlock response (latency clamped to 0)\n`);
      Object.assign(out, {
        ops: handoffMs.length, ops_per_sec: handoffMs.length / opts.seconds,
        p50_ms: ms3(pct(acquireMs, 0.5)), p90_ms: ms3(pct(acquireMs, 0.9)),
        p99_ms: ms3(pct(acquireMs, 0.99)), p999_ms: ms3(pct(acquireMs, 0.999)),
        errors,
        handoff_p50_ms: ms3(pct(handoffMs, 0.5)), handoff_p90_ms: ms3(pct(handoffMs, 0.9)),
        handoff_p99_ms: ms3(pct(handoffMs, 0.99)),
      });
    } else {
      Object.assign(out, {
        ops: pairMs.length, ops_per_sec: pairMs.length / opts.seconds,
        p50_ms: ms3(pct(acquireMs, 0.5)), p90_ms: ms3(pct(acquireMs, 0.9)),
        p99_ms: ms3(pct(acquireMs, 0.99)), p999_ms: ms3(pct(acquireMs, 0.999)),
        errors,
        pair_p50_ms: ms3(pct(pairMs, 0.5)), pair_p99_ms: ms3(pct(pairMs, 0.99)),
      });
    }
    out.ops_per_sec = Math.round(out.ops_per_sec * 10) / 10;
    for (const [k, n] of errorKinds) process.stderr.write(`bench: error x${n}: ${k}\n`);
    process.stderr.write(`bench: done in ${((now() - t0) / 1000).toFixed(2)} s (window ${opts.seconds} s, ` +
      `drained in ${((now() - deadline) / 1000).toFixed(2)} s, ttl ${opts.ttlS} s)\n`);
    const floatKeys = new Set(['seconds', 'ops_per_sec', 'p50_ms', 'p90_ms', 'p99_ms', 'p999_ms',
      'pair_p50_ms', 'pair_p99_ms', 'handoff_p50_ms', 'handoff_p90_ms', 'handoff_p99_ms']);
    emit(out, floatKeys);
    agent.destroy();
    process.exitCode = 0;
    if (hardStopped) process.exit(0);
  }

  await Promise.all(loops);
  await finish();
}

main().catch((e) => { process.stderr.write(`bench: ${e.stack || e}\n`); process.exit(1); });
