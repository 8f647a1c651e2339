#!/usr/bin/env node
// Peer benchmark: a Redlock library over ioredis 5, N Redis masters, in-process. One driver for
// every library (--library, default node-redlock): node-redlock 5.0.0-beta.2, its maintained fork
// @sesamecare-oss/redlock, redlock-universal; each through a small adapter in libraries/ (the
// contract: libraries/index.js). Same workloads, same JSON line for all.
//
//   node bench.js [--library node-redlock|sesamecare-redlock|redlock-universal] \
//                 --redis 127.0.0.1:7001,127.0.0.1:7002,... \
//                 --workload uncontended|contended --callers N --seconds S \
//                 [--names 10000] [--ttl-ms 10000]
//   node bench.js --redis ... --workload expiry [--rounds 50] [--ttl-ms 200]
//   node bench.js --redis ... --workload multi --callers N --seconds S [--set-size 4] [--set-pool 0]
//
// uncontended: one attempt per acquire (a held name is "refused", never waited for); contended:
// the library's default retry settings, untouched. expiry and multi: node-redlock's API (acquire
// of several resources at once, lock.expiration): node-redlock and @sesamecare-oss/redlock only.
//
// multi: node-redlock's multi-resource lock, redlock.acquire([r1, r2, r3, r4], ttl), laid out
// like fencelock's http_bench --workload set (#19): --set-pool 0, caller i always asks for its
// own resources bench:set:<i>:<k> (retryCount 0, nobody else holds them); --set-pool P, each
// acquire takes --set-size distinct resources at random out of P shared bench:pool:<j>, in
// random order, with the library's default retries. Acquire, release at once (ops = pairs).
//
// expiry: take-over of an expired lock (#19), sequential rounds on fresh names.
// A holder (retryCount 0) acquires with --ttl-ms and never releases; at once a
// waiter with the library's default retry settings asks for the same name.
// Reported: the waiter's grant − the holder's validity end (lock.expiration:
// start + ttl − drift) and − its ttl end (start + ttl), median/p90/max.
//
// Prints ONE JSON line on stdout (see README.md for the keys); diagnostics go
// to stderr. CommonJS on purpose: run.sh resolves the libraries and ioredis
// through NODE_PATH, which only CommonJS `require` honours.
"use strict";

const { performance } = require("perf_hooks");
const { libraries, loadLibrary } = require("./libraries");

// Wind-down after --seconds, all told <= 5 s: callers get DRAIN_LIMIT_MS to
// finish their in-flight operation (a contended acquire retrying with the
// defaults needs up to ~3.1 s), then QUIT gets QUIT_LIMIT_MS, then we exit.
// ioredis has no command timeout by default, so an operation on a frozen
// majority would otherwise never end.
const DRAIN_LIMIT_MS = 4000;
const QUIT_LIMIT_MS = 500;
const CONNECT_TIMEOUT_MS = 5000;

function usage(msg) {
  if (msg) process.stderr.write(`bench.js: ${msg}\n`);
  process.stderr.write(
    `usage: node bench.js [--library ${libraries.join("|")}] --redis H:P[,H:P...] --workload uncontended|contended ` +
      "--callers N --seconds S [--names 10000] [--ttl-ms 10000] [--hold-ms 1]\n" +
      "       node bench.js --redis H:P[,H:P...] --workload expiry [--rounds 50] [--ttl-ms 200]\n" +
      "       node bench.js --redis H:P[,H:P...] --workload multi --callers N --seconds S " +
      "[--set-size 4] [--set-pool 0] [--ttl-ms 10000]\n"
  );
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { library: "node-redlock", names: 10000, holdMs: 1, rounds: 50, setSize: 4, setPool: 0 };
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i];
    let v;
    const eq = a.indexOf("=");
    if (a.startsWith("--") && eq > 0) {
      v = a.slice(eq + 1);
      a = a.slice(0, eq);
    } else if (a.startsWith("--")) {
      if (i + 1 >= argv.length) usage(`missing value for ${a}`);
      v = argv[++i];
    } else {
      usage(`unexpected argument ${a}`);
    }
    switch (a) {
      case "--library":
        if (!libraries.includes(v)) usage(`bad --library ${v}`);
        opts.library = v;
        break;
      case "--redis":
        opts.redis = v.split(",").map((s) => s.trim()).filter(Boolean).map((hp) => {
          const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(hp);
          if (!m) usage(`bad --redis entry ${hp} (want host:port)`);
          return { host: m[1], port: Number(m[2]) };
        });
        break;
      case "--hold-ms":
        opts.holdMs = Number(v);
        if (!Number.isInteger(opts.holdMs) || opts.holdMs < 0) usage(`bad --hold-ms ${v}`);
        break;
      case "--workload":
        if (!["uncontended", "contended", "expiry", "multi"].includes(v)) usage(`bad --workload ${v}`);
        opts.workload = v;
        break;
      case "--callers":
        opts.callers = Number(v);
        break;
      case "--seconds":
        opts.seconds = Number(v);
        break;
      case "--rounds":
        opts.rounds = Number(v);
        if (!Number.isInteger(opts.rounds) || opts.rounds < 1 || opts.rounds > 10000) usage(`bad --rounds ${v}`);
        break;
      case "--names":
        opts.names = Number(v);
        break;
      case "--set-size":
        opts.setSize = Number(v);
        if (!Number.isInteger(opts.setSize) || opts.setSize < 1) usage(`bad --set-size ${v}`);
        break;
      case "--set-pool":
        opts.setPool = Number(v);
        if (!Number.isInteger(opts.setPool) || opts.setPool < 0) usage(`bad --set-pool ${v}`);
        break;
      case "--ttl-ms":
        opts.ttlMs = Number(v);
        break;
      default:
        usage(`unknown option ${a}`);
    }
  }
  if (!opts.redis || opts.redis.length === 0) usage("--redis is required");
  if (!opts.workload) usage("--workload is required");
  if (opts.ttlMs === undefined) opts.ttlMs = opts.workload === "expiry" ? 200 : 10000;
  if (opts.workload === "expiry") {
    opts.callers = 1;
    opts.seconds = opts.seconds || 1;
  }
  if (!Number.isInteger(opts.callers) || opts.callers < 1) usage("--callers must be an integer >= 1");
  if (!(opts.seconds > 0) || !Number.isFinite(opts.seconds)) usage("--seconds must be > 0");
  if (!Number.isInteger(opts.names) || opts.names < 1) usage("--names must be an integer >= 1");
  if (opts.setPool > 0 && opts.setPool < opts.setSize) usage("--set-pool must be 0 or >= --set-size");
  // Redlock rejects non-integer durations.
  if (!Number.isInteger(opts.ttlMs) || opts.ttlMs < 1) usage("--ttl-ms must be an integer >= 1");
  return opts;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

// Exact percentile (nearest rank) over a sorted copy of the samples.
function percentiles(samples, ps) {
  const s = Float64Array.from(samples).sort();
  return ps.map((p) => {
    if (s.length === 0) return null;
    const rank = Math.max(1, Math.ceil(p * s.length));
    return round3(s[rank - 1]);
  });
}
const round3 = (x) => Math.round(x * 1000) / 1000;

async function main() {
  const opts = parseArgs(process.argv.slice(2));

  const ioredisMod = require("ioredis");
  const Redis = ioredisMod.Redis || ioredisMod.default || ioredisMod;
  const lib = loadLibrary(opts.library);
  if (!lib.workloads.includes(opts.workload)) usage(`${opts.library} has no ${opts.workload} workload here`);
  const { system, library, version } = lib;

  // One ioredis client per Redis node, shared by every caller: how these libraries
  // are meant to be used. ioredis defaults otherwise.
  let clientErrors = 0;
  const clients = opts.redis.map(({ host, port }) => {
    const c = new Redis({ host, port });
    c.on("error", (e) => {
      if (clientErrors++ < 5) process.stderr.write(`ioredis ${host}:${port}: ${e.message}\n`);
    });
    return c;
  });

  const closeAll = async () => {
    await Promise.race([
      Promise.allSettled(clients.map((c) => c.quit())),
      sleep(QUIT_LIMIT_MS),
    ]);
    for (const c of clients) c.disconnect();
  };

  // Every node must answer before the clock starts.
  try {
    await Promise.race([
      Promise.all(clients.map((c) => c.ping())),
      sleep(CONNECT_TIMEOUT_MS).then(() => {
        throw new Error(`not all Redis nodes answered PING within ${CONNECT_TIMEOUT_MS} ms`);
      }),
    ]);
  } catch (e) {
    process.stderr.write(`bench.js: ${e.message}\n`);
    for (const c of clients) c.disconnect();
    process.exit(1);
  }

  // uncontended: library defaults except no retries (a held name is
  // "refused", never waited for). contended: library defaults, untouched.
  // multi: as uncontended with its own resources, as contended (default retries) on a shared pool.
  const retries = !(opts.workload === "uncontended" || (opts.workload === "multi" && opts.setPool === 0));
  const locker = lib.create(clients);
  process.stderr.write(
    `${library} ${version}, ${clients.length} nodes, workload ${opts.workload}, ` +
      `settings ${JSON.stringify(locker.settings)}${retries ? "" : ", without retries"}\n`
  );

  // Warm-up outside the measurement: loads the Lua scripts (the first EVALSHA
  // may be answered NOSCRIPT, the library then falls back to EVAL) on every node.
  try {
    const l = await locker.acquire([`bench:warmup:${process.pid}`], opts.ttlMs, false);
    await locker.release(l);
  } catch (e) {
    process.stderr.write(`bench.js: warm-up acquire/release failed: ${e.message}\n`);
  }

  const durMs = opts.seconds * 1000;
  const t0 = now();
  const deadline = t0 + durMs;

  const acqLat = []; // ms, successful acquires that completed inside the window
  let refused = 0;
  let errors = 0;
  let result;
  let running = opts.callers; // callers that have not left their loop
  // Run the callers; afterwards, those still stuck in an operation count as errors.
  const runCallers = async (caller) => {
    const all = Array.from({ length: opts.callers }, (_, id) => caller(id).finally(() => running--));
    await Promise.race([Promise.all(all), sleep(deadline + DRAIN_LIMIT_MS - now())]);
    if (running > 0) {
      process.stderr.write(
        `bench.js: ${running} caller(s) still inside an acquire/release ${DRAIN_LIMIT_MS} ms ` +
          `after the end; counted as errors\n`
      );
      errors += running;
    }
  };

  // One acquire in a caller's loop: the lock, or null once the failure is counted (inside the
  // window only) as onLocked() when the resources were held, or as an error.
  const tryAcquire = async (resources, withRetries, onLocked) => {
    const mark = locker.mark();
    try {
      return await locker.acquire(resources, opts.ttlMs, withRetries);
    } catch (e) {
      const kind = await locker.classify(e, mark);
      if (now() <= deadline) {
        if (kind === "locked") onLocked();
        else errors++;
      }
      return null;
    }
  };

  // The resources of one acquire: one random name (uncontended), or a set (multi).
  const resourcesOf = (id) => {
    if (opts.workload === "uncontended") return ["bench:" + Math.floor(Math.random() * opts.names)];
    if (opts.setPool === 0) return Array.from({ length: opts.setSize }, (_, k) => `bench:set:${id}:${k}`);
    const pool = Array.from({ length: opts.setPool }, (_, j) => j);
    for (let k = 0; k < opts.setSize; k++) {
      const j = k + Math.floor(Math.random() * (pool.length - k));
      [pool[k], pool[j]] = [pool[j], pool[k]];
    }
    return pool.slice(0, opts.setSize).map((j) => `bench:pool:${j}`);
  };

  if (opts.workload === "uncontended" || opts.workload === "multi") {
    const pairLat = [];
    let pairs = 0;
    const caller = async (id) => {
      while (now() < deadline) {
        const resources = resourcesOf(id);
        const ta = now();
        const lock = await tryAcquire(resources, retries, () => refused++);
        if (!lock) continue;
        const tb = now();
        try {
          await locker.release(lock);
        } catch (e) {
          if (now() <= deadline) errors++;
          continue;
        }
        const tc = now();
        if (tc <= deadline) {
          pairs++;
          acqLat.push(tb - ta);
          pairLat.push(tc - ta);
        }
      }
    };
    await runCallers(caller);
    const [p50, p90, p99, p999] = percentiles(acqLat, [0.5, 0.9, 0.99, 0.999]);
    const [pp50, pp99] = percentiles(pairLat, [0.5, 0.99]);
    result = {
      system,
      library,
      version,
      workload: opts.workload,
      ...(opts.workload === "multi" ? { set_size: opts.setSize, set_pool: opts.setPool } : {}),
      callers: opts.callers,
      seconds: opts.seconds,
      ops: pairs,
      ops_per_sec: round3(pairs / opts.seconds),
      p50_ms: p50,
      p90_ms: p90,
      p99_ms: p99,
      p999_ms: p999,
      pair_p50_ms: pp50,
      pair_p99_ms: pp99,
      refused,
      errors,
    };
  } else if (opts.workload === "expiry") {
    const afterValidity = []; // ms, waiter's grant − holder's lock.expiration
    const afterTtl = []; // ms, waiter's grant − (holder's start + ttl)
    let rounds = 0;
    let granted = 0;
    for (; rounds < opts.rounds; rounds++) {
      const key = `bench:expiry:${process.pid}:${rounds}`;
      const startDate = Date.now();
      const ta = now();
      let held;
      try {
        held = await locker.acquire([key], opts.ttlMs, false);
      } catch (e) {
        errors++;
        continue;
      }
      // lock.expiration is on Date.now()'s clock: carry it over to performance.now()'s.
      const validityEnd = ta + (locker.expiration(held) - startDate);
      const ttlEnd = ta + opts.ttlMs;
      const mark = locker.mark();
      let took;
      try {
        took = await locker.acquire([key], opts.ttlMs, true); // the library's default retries
      } catch (e) {
        const kind = await locker.classify(e, mark);
        if (kind === "locked") refused++;
        else errors++;
        continue;
      }
      const tg = now();
      granted++;
      afterValidity.push(tg - validityEnd);
      afterTtl.push(tg - ttlEnd);
      try {
        await locker.release(took);
      } catch (e) {
        errors++;
      }
    }
    const [v50, v90, vmax] = percentiles(afterValidity, [0.5, 0.9, 1]);
    const [t50, t90, tmax] = percentiles(afterTtl, [0.5, 0.9, 1]);
    result = {
      system,
      library,
      version,
      workload: "expiry",
      placement: "in-process",
      rounds,
      ops: granted,
      ttl_ms: opts.ttlMs,
      after_validity_p50_ms: v50,
      after_validity_p90_ms: v90,
      after_validity_max_ms: vmax,
      after_ttl_p50_ms: t50,
      after_ttl_p90_ms: t90,
      after_ttl_max_ms: tmax,
      refused,
      errors,
    };
  } else {
    const key = "bench:hot";
    const gaps = []; // ms from a release being issued to the next grant
    let handoffs = 0;
    let failed = 0;
    let lastRelease = null; // time the current/most recent holder let go
    let lastHolder = -1;
    const otherGaps = []; // the subset of gaps where the grant went to another caller
    let selfRegrants = 0;
    const caller = async (id) => {
      while (now() < deadline) {
        const ta = now();
        const lock = await tryAcquire([key], true, () => failed++);
        if (!lock) continue;
        const tg = now();
        if (tg <= deadline) {
          handoffs++;
          acqLat.push(tg - ta);
          if (lastRelease !== null) {
            gaps.push(tg - lastRelease);
            if (lastHolder === id) selfRegrants++;
            else otherGaps.push(tg - lastRelease);
          }
        }
        lastHolder = id;
        lastRelease = null; // this grant consumed the previous release
        if (opts.holdMs > 0) await sleep(opts.holdMs); // hold the lock (default ~1 ms)
        lastRelease = now(); // release issued: the lock is being handed on
        try {
          await locker.release(lock);
        } catch (e) {
          if (now() <= deadline) errors++;
        }
      }
    };
    await runCallers(caller);
    const [p50, p90, p99, p999] = percentiles(acqLat, [0.5, 0.9, 0.99, 0.999]);
    const [h50, h90, h99] = percentiles(gaps, [0.5, 0.9, 0.99]);
    // Not part of the JSON contract: node-redlock has no waiter queue, so the
    // caller that just released usually re-acquires at once while the others
    // sleep in their retry timers. Say how much of the hand-off figure that is.
    const [o50, o90, o99] = percentiles(otherGaps, [0.5, 0.9, 0.99]);
    process.stderr.write(
      `contended breakdown: ${gaps.length} release->grant gaps, ${selfRegrants} re-grants to the ` +
        `releasing caller, ${otherGaps.length} to another caller ` +
        `(p50 ${o50} / p90 ${o90} / p99 ${o99} ms)\n`
    );
    result = {
      system,
      library,
      version,
      workload: "contended",
      callers: opts.callers,
      seconds: opts.seconds,
      ops: handoffs,
      ops_per_sec: round3(handoffs / opts.seconds),
      p50_ms: p50,
      p90_ms: p90,
      p99_ms: p99,
      p999_ms: p999,
      handoff_p50_ms: h50,
      handoff_p90_ms: h90,
      handoff_p99_ms: h99,
      failed_acquires: failed,
      refused: 0,
      errors,
    };
  }

  const line = JSON.stringify(result) + "\n";
  await new Promise((r) => process.stdout.write(line, r));
  await closeAll();
  // Anything still pending (a caller stuck past the drain limit, redlock
  // retry timers) must not keep the process alive.
  process.exit(0);
}

main().catch((e) => {
  process.stderr.write(`bench.js: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
