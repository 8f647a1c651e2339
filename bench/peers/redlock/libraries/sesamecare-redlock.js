// @sesamecare-oss/redlock, the maintained fork of node-redlock: the same API, Redlock a named export.
"use strict";

const { redlockApi } = require("./redlock-api");

module.exports = () => {
  const mod = require("@sesamecare-oss/redlock");
  const { ExecutionError, ResourceLockedError } = mod;
  return redlockApi({
    system: "sesamecare-redlock",
    library: "@sesamecare-oss/redlock",
    Redlock: mod.Redlock || mod.default,
    ExecutionError,
    ResourceLockedError,
  });
};
