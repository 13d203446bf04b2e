#!/usr/bin/env node
// Builds the file I/O addon at install time from native/*.c with node-gyp, a C compiler and the running
// node's headers; no OS package. Any failure prints one line and exits 0: the package then does its file
// I/O through node:fs, so an install never fails because of this step.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const addon = join(pkgDir, "build", "Release", "zstream_fileio.node");
const say = (what) => console.error(`@zarr-stream/fileio: ${what}`);

function giveUp(why) {
  say(`native addon not built (${why}); file I/O goes through node:fs.`);
  process.exit(0);
}

// Headers come from the running node's prefix (/usr/bin/node → /usr/include/node): node-gyp would
// otherwise try to download them.
const nodedir = dirname(dirname(process.execPath));
if (!existsSync(join(nodedir, "include", "node", "node_api.h")))
  giveUp(`no ${nodedir}/include/node/node_api.h`);

// The repository's devDependency, or in a downstream install the node-gyp bundled with npm.
let gyp = process.env.npm_config_node_gyp;
try {
  gyp = createRequire(import.meta.url).resolve("node-gyp/bin/node-gyp.js");
} catch {
  if (!gyp || !existsSync(gyp)) giveUp("node-gyp is not installed");
}

// Every `npm install` in the workspace re-runs install scripts; rebuilding a current addon would delete
// build/ under processes that have it loaded.
const inputs = [join(pkgDir, "binding.gyp"), fileURLToPath(import.meta.url)].concat(
  readdirSync(join(pkgDir, "native")).map((f) => join(pkgDir, "native", f)),
);
const stale =
  !existsSync(addon) || statSync(addon).mtimeMs < Math.max(...inputs.map((f) => statSync(f).mtimeMs));
if (!stale && !process.env.ZSTREAM_FORCE_BUILD) {
  say("native addon is up to date.");
  process.exit(0);
}

const sanitize = process.env.ZSTREAM_SANITIZE === "1" ? ["--", "-Dsanitize=1"] : [];
for (const step of ["configure", "build"]) {
  const r = spawnSync(
    process.execPath,
    [gyp, step, `--nodedir=${nodedir}`, "--jobs=2", ...(step === "configure" ? sanitize : [])],
    { cwd: pkgDir, stdio: process.env.ZSTREAM_BUILD_VERBOSE ? "inherit" : "pipe", encoding: "utf8" },
  );
  if (r.status !== 0) {
    const firstError = `${r.stderr ?? ""}`.split("\n").find((l) => /error/i.test(l));
    giveUp(firstError?.trim() || `node-gyp ${step} exited with ${r.status ?? r.signal}`);
  }
}
if (!existsSync(addon)) giveUp("node-gyp produced no .node file");
say("native addon built.");
