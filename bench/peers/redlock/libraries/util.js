// Small helpers of the library adapters.
"use strict";

const fs = require("fs");
const path = require("path");

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The installed package's own version, without a leading "v" (redlock 5.0.0-beta.2 says
// "v5.0.0-beta.2"). Packages whose "exports" map hides package.json from require are read from
// the file, found by walking up from the package's entry point.
function packageVersion(name) {
  try {
    let dir = path.dirname(require.resolve(name));
    for (let i = 0; i < 6; i++, dir = path.dirname(dir)) {
      const p = path.join(dir, "package.json");
      if (fs.existsSync(p)) {
        const pkg = JSON.parse(fs.readFileSync(p, "utf8"));
        if (pkg.name === name) return String(pkg.version).replace(/^v/, "");
      }
    }
  } catch (_) {
    /* fall through */
  }
  return "unknown";
}

module.exports = { packageVersion, sleep };
