// The Redlock libraries bench.js can drive, each through a small adapter: node-redlock and its
// fork share one (redlock-api.js: the same API), redlock-universal has its own.
//
// Loading an adapter loads its library (from NODE_PATH) and returns:
//   system     the "system" of the JSON line (node-redlock, sesamecare-redlock, redlock-universal)
//   library    the npm package; version  its installed version
//   workloads  the bench.js workloads it supports
//   create(clients)  one locker over the given ioredis clients (one per Redis node), with the
//              library's default settings, returning:
//     settings                            what to print on stderr: the settings in force
//     acquire(resources, ttlMs, retries)  resolves to a handle once all resources are locked on a
//                                         majority; rejects when refused or failed. retries:
//                                         true = the library's default retry settings, false =
//                                         one attempt (a held lock is refused at once)
//     release(handle)                     resolves once released (rejects on failure)
//     expiration(handle)                  the end of the lock's validity, in Date.now() ms
//     mark()                              opaque state taken before an acquire, for classify
//     classify(err, mark)                 resolves "locked" (the resources were held: refused)
//                                         or "error" (anything else) for a rejected acquire
"use strict";

const { redlockApi } = require("./redlock-api");

const adapters = {
  "node-redlock": () => redlockApi("node-redlock", "redlock"),
  "sesamecare-redlock": () => redlockApi("sesamecare-redlock", "@sesamecare-oss/redlock"),
  "redlock-universal": () => require("./redlock-universal")(),
};

function loadLibrary(name) {
  const load = adapters[name];
  if (!load) throw new Error(`unknown library ${name} (one of: ${Object.keys(adapters).join(", ")})`);
  return load();
}

module.exports = { libraries: Object.keys(adapters), loadLibrary };
