#!/usr/bin/env node
// Builds the Node-API addon at install time: our Blosc (native/blosc1.c) with zstd 1.5.7 compiled in (see
// fetchZstdSources), or the system libzstd when those sources can't be had. It needs a C compiler and the
// running node's headers, no other OS package. Any failure prints one line and exits 0: the package then
// runs on its WebAssembly backend, so an install must never fail because of this step.
// ZSTREAM_SANITIZE=1 builds with AddressSanitizer and UBSan (for the sanitizer test run only).
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { fetchZstdSources, ZSTD_SOURCE } from "./zstd-sources.mjs";

const pkgDir = join(dirname(fileURLToPath(import.meta.url)), "..");

function notice(why) {
  console.error(`@zarr-stream/codecs: native addon not built (${why}); the wasm backend will be used.`);
  process.exit(0);
}

// node-gyp would download headers when it finds none; there is no network for that, so point it at the
// prefix of the running node (/usr/bin/node → /usr, whose include/node/node_api.h ships with node).
const nodedir = dirname(dirname(process.execPath));
if (!existsSync(join(nodedir, "include", "node", "node_api.h")))
  notice(`no ${nodedir}/include/node/node_api.h`);

// Our devDependency in the repository; in a downstream install, the node-gyp npm itself bundles (npm
// exports its path to install scripts as npm_config_node_gyp).
let gyp = process.env.npm_config_node_gyp;
try {
  gyp = createRequire(import.meta.url).resolve("node-gyp/bin/node-gyp.js");
} catch {
  if (!gyp || !existsSync(gyp)) notice("node-gyp is not installed");
}

// Every `npm install -w <any workspace>` re-runs this script; rebuilding an addon that is current would
// delete build/ under processes that are loading it. So build only when a source is newer than the addon.
const addon = join(pkgDir, "build", "Release", "zstream_codecs.node");
const sources = [
  join(pkgDir, "binding.gyp"),
  fileURLToPath(import.meta.url),
  ...readdirSync(join(pkgDir, "native")).map((f) => join(pkgDir, "native", f)),
];
const newestSource = Math.max(...sources.map((f) => statSync(f).mtimeMs));
if (!process.env.ZSTREAM_FORCE_BUILD && existsSync(addon) && statSync(addon).mtimeMs >= newestSource) {
  console.error("@zarr-stream/codecs: native addon is up to date.");
  process.exit(0);
}

const zstdSrc = process.env.ZSTREAM_SYSTEM_ZSTD ? null : fetchZstdSources(pkgDir);

function gypStep(step) {
  const defs = [
    ...(zstdSrc ? [`-Dzstd_src=${zstdSrc}`] : []),
    ...(process.env.ZSTREAM_SANITIZE === "1" ? ["-Dsanitize=1"] : []),
  ];
  const vars = step === "configure" && defs.length ? ["--", ...defs] : [];
  return spawnSync(process.execPath, [gyp, step, `--nodedir=${nodedir}`, "--jobs=2", ...vars], {
    cwd: pkgDir,
    stdio: process.env.ZSTREAM_BUILD_VERBOSE ? "inherit" : "pipe",
    encoding: "utf8",
  });
}
let res = gypStep("configure");
if (res.status === 0) res = gypStep("build");
if (res.status !== 0) {
  const lastError = `${res.stderr ?? ""}`
    .split("\n")
    .filter((l) => /error/i.test(l))
    .slice(0, 1)
    .join("")
    .trim();
  notice(lastError || `node-gyp exited with ${res.status ?? res.signal}`);
}
if (!existsSync(join(pkgDir, "build", "Release", "zstream_codecs.node")))
  notice("node-gyp produced no .node file");
console.error(
  `@zarr-stream/codecs: native addon built (our Blosc, ${zstdSrc ? `zstd ${ZSTD_SOURCE.version} compiled in` : "system libzstd"}).`,
);
