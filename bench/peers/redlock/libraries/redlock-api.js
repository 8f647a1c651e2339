// Adapter for the node-redlock API, shared by node-redlock 5 (npm `redlock`, Redlock the default
// export) and its maintained fork @sesamecare-oss/redlock (the same API rewritten in TypeScript
// for ioredis 5, Redlock a named export): new Redlock(clients, settings);
// redlock.acquire(resources, ttl, settings) resolves to a Lock or rejects with an ExecutionError;
// lock.release(); lock.expiration is on Date.now()'s clock. The adapter contract: index.js.
"use strict";

const { packageVersion, sleep } = require("./util");

// How long classify() waits for the last attempt's votes (see classify below).
const VOTES_WAIT_MS = 5;

// system: the name of the JSON line; library: the npm package to load.
function redlockApi(system, library) {
  const mod = require(library);
  const Redlock = mod.Redlock || mod.default || mod;
  const { ExecutionError, ResourceLockedError } = mod;
  return {
    system,
    library,
    version: packageVersion(library),
    workloads: ["uncontended", "contended", "multi", "expiry"],
    create(clients) {
      // One Redlock with the library's own defaults; retries are switched off per acquire.
      const redlock = new Redlock(clients);
      let nodeErrors = 0;
      redlock.on("error", (e) => {
        if (!(e instanceof ResourceLockedError)) nodeErrors++;
      });
      return {
        settings: redlock.settings,
        acquire: (resources, ttlMs, retries) =>
          retries ? redlock.acquire(resources, ttlMs) : redlock.acquire(resources, ttlMs, { retryCount: 0 }),
        release: (lock) => lock.release(),
        expiration: (lock) => lock.expiration,
        mark: () => nodeErrors,
        // A failed acquire: a plain "the lock is held" (every vote against was a
        // ResourceLockedError) or a real error (Redis error, disconnect, no quorum of answers...).
        // The attempt's votes are a promise that settles once ALL nodes have answered, normally
        // within a fraction of a millisecond of the rejection; if a node is slow or frozen it may
        // never settle: then it is an error only if the library reported a node error ("error"
        // event) while this acquire ran (mark = the count before it).
        async classify(err, mark) {
          if (!(err instanceof ExecutionError) || !Array.isArray(err.attempts) || err.attempts.length === 0) {
            return "error";
          }
          const last = await Promise.race([
            err.attempts[err.attempts.length - 1],
            sleep(VOTES_WAIT_MS).then(() => null),
          ]);
          if (!last) return nodeErrors === mark ? "locked" : "error";
          for (const e of last.votesAgainst.values()) {
            if (!(e instanceof ResourceLockedError)) return "error";
          }
          return "locked";
        },
      };
    },
  };
}

module.exports = { redlockApi };
