#!/usr/bin/env node
// What installing the CLI costs a user: packs the published packages (after `npm run build`), installs
// @zarr-stream/cli from its tarball into a scratch project (our other packages from theirs through
// `overrides`, third-party ones from npm's cache or the registry), with npm's default settings, and prints
// the size of node_modules, the native addons it built, the largest packages, and the time it took.
//   node scripts/install-footprint.mjs [--ignore-scripts] [--keep]
// The figures in packages/cli/README.md ("Install footprint") come from this script.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const ignoreScripts = process.argv.includes("--ignore-scripts");
const keep = process.argv.includes("--keep");
const manifest = (dir) => JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8"));
const published = manifest(".").workspaces.filter((w) => manifest(w).private !== true);
const work = mkdtempSync(join(tmpdir(), "zs-footprint-"));
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("npm_")));

function npm(args, cwd) {
  const r = spawnSync("npm", [...args, "--no-audit", "--no-fund"], { cwd, env, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`npm ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

/** Bytes on disk under `dir` (allocated blocks, as du counts them), symlinks not followed. */
function diskBytes(dir) {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    const s = statSync(p, { throwIfNoEntry: false, bigint: false });
    if (s === undefined || e.isSymbolicLink()) continue;
    total += s.blocks * 512;
    if (e.isDirectory()) total += diskBytes(p);
  }
  return total;
}

function findAddons(dir, out = []) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory() && !e.isSymbolicLink()) findAddons(p, out);
    else if (e.name.endsWith(".node") && p.includes(`${"build"}/Release/`) && !p.includes("obj.target"))
      out.push(p);
  }
  return out;
}

const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;
try {
  const tarballs = join(work, "tarballs");
  mkdirSync(tarballs);
  const packed = JSON.parse(
    npm(
      [
        "pack",
        "--json",
        "--ignore-scripts",
        "--pack-destination",
        tarballs,
        ...published.flatMap((w) => ["-w", w]),
      ],
      root,
    ),
  );
  const file = (p) => `file:${join(tarballs, p.filename)}`;
  const cli = packed.find((p) => p.name === "@zarr-stream/cli");
  const project = join(work, "project");
  mkdirSync(project);
  writeFileSync(
    join(project, "package.json"),
    JSON.stringify({
      name: "footprint",
      private: true,
      dependencies: { "@zarr-stream/cli": file(cli) },
      // Our packages are not on the registry: every range of theirs resolves to its tarball.
      overrides: Object.fromEntries(packed.filter((p) => p !== cli).map((p) => [p.name, file(p)])),
    }),
  );
  const started = performance.now();
  npm(["install", "--prefer-offline", ...(ignoreScripts ? ["--ignore-scripts"] : [])], project);
  const seconds = (performance.now() - started) / 1000;
  const modules = join(project, "node_modules");
  const sizes = [];
  for (const e of readdirSync(modules)) {
    if (e.startsWith(".")) continue;
    const scoped = e.startsWith("@") ? readdirSync(join(modules, e)).map((s) => `${e}/${s}`) : [e];
    for (const name of scoped) sizes.push([name, diskBytes(join(modules, name))]);
  }
  sizes.sort((a, b) => b[1] - a[1]);
  const total = diskBytes(modules);
  const addons = findAddons(modules).map((p) => relative(modules, p));
  console.log(
    `npm ${npm(["--version"], project).trim()}, Node ${process.version}, ${ignoreScripts ? "--ignore-scripts" : "default settings"}`,
  );
  console.log(`node_modules: ${mb(total)} in ${sizes.length} packages, installed in ${seconds.toFixed(0)} s`);
  console.log(`native addons built: ${addons.length === 0 ? "none" : addons.join(", ")}`);
  console.log("largest:");
  for (const [name, bytes] of sizes.slice(0, 12)) console.log(`  ${mb(bytes).padStart(9)}  ${name}`);
  const ours = sizes.filter(([n]) => n.startsWith("@zarr-stream/")).reduce((a, [, b]) => a + b, 0);
  const sdk = sizes
    .filter(([n]) => n.startsWith("@aws-sdk/") || n.startsWith("@smithy/"))
    .reduce((a, [, b]) => a + b, 0);
  console.log(`  ours ${mb(ours)}, AWS SDK (@aws-sdk, @smithy) ${mb(sdk)}`);
  if (keep) console.log(`kept: ${project}`);
} finally {
  if (!keep) rmSync(work, { recursive: true, force: true });
}
