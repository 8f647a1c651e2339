// redlock-universal: a lock object per key, createRedlock({ adapters, key, ttl, ... }), with
// lock.acquire() resolving to a handle and lock.release(handle) to whether a quorum released.
// A lock object is made for every acquire, as for a name known only at run time; its defaults
// are the library's own. A failed acquire rejects with LockAcquisitionError whether the key was
// held or nodes failed (it keeps no per-node votes): counted as "locked", anything else as an error.
// The adapter contract: libraries/index.js.
"use strict";

const { packageVersion } = require("./util");

module.exports = () => {
  const { createRedlock, IoredisAdapter, LockAcquisitionError } = require("redlock-universal");
  return {
    system: "redlock-universal",
    library: "redlock-universal",
    version: packageVersion("redlock-universal"),
    workloads: ["uncontended", "contended"],
    create(clients) {
      const adapters = clients.map((c) => new IoredisAdapter(c));
      const make = (key, ttl, retries) =>
        createRedlock(retries ? { adapters, key, ttl } : { adapters, key, ttl, retryAttempts: 0 });
      const { retryAttempts, retryDelay, clockDriftFactor, quorum } = make("bench:settings", 10000, true).getConfig();
      return {
        settings: { retryAttempts, retryDelay, clockDriftFactor, quorum },
        async acquire(resources, ttlMs, retries) {
          if (resources.length !== 1) throw new Error("redlock-universal locks one key per lock object");
          const lock = make(resources[0], ttlMs, retries);
          return { lock, handle: await lock.acquire() };
        },
        async release({ lock, handle }) {
          if (!(await lock.release(handle))) throw new Error("released on fewer than a quorum of nodes");
        },
        expiration: () => {
          throw new Error("redlock-universal: no expiry workload");
        },
        mark: () => null,
        classify: async (err) => (err instanceof LockAcquisitionError ? "locked" : "error"),
      };
    },
  };
};
