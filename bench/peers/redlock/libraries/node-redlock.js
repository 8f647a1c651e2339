// node-redlock 5.0.0-beta.2 (npm `redlock`): Redlock is the default export.
"use strict";

const { redlockApi } = require("./redlock-api");

module.exports = () => {
  const mod = require("redlock");
  const { ExecutionError, ResourceLockedError } = mod;
  return redlockApi({
    system: "node-redlock",
    library: "redlock",
    Redlock: mod.default || mod,
    ExecutionError,
    ResourceLockedError,
  });
};
