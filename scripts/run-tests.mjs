#!/usr/bin/env node
// Runs every compiled test of every package in one `node --test` process tree and prints the closing
// line CI reads. Turbo would prefix each line with the package name, so the counts are taken from a TAP
// copy of the run instead of from turbo's output.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const only = process.argv.slice(2); // optional package names

function testFiles(dir) {
  let out = [];
  let entries;
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) out = out.concat(testFiles(p));
    else if (e.endsWith(".test.js")) out.push(p);
  }
  return out;
}

const packages = readdirSync(join(root, "packages")).filter((p) => only.length === 0 || only.includes(p));
const files = packages.flatMap((p) => testFiles(join(root, "packages", p, "dist", "test"))).sort();
// Repository-level tests (plain JS, no build step) run with the full suite only.
if (only.length === 0) {
  files.push(
    ...readdirSync(join(root, "tests"))
      .filter((f) => f.endsWith(".test.mjs"))
      .map((f) => join(root, "tests", f)),
  );
}
if (files.length === 0) {
  console.error("no test files found (did the build run?)");
  console.log("0 passed, 1 failed");
  process.exit(1);
}
const tap = join(mkdtempSync(join(tmpdir(), "zs-tests-")), "run.tap");
const res = spawnSync(
  process.execPath,
  [
    "--test",
    "--test-concurrency=2",
    "--test-reporter=spec",
    "--test-reporter-destination=stdout",
    "--test-reporter=tap",
    `--test-reporter-destination=${tap}`,
    ...files,
  ],
  { stdio: "inherit", cwd: root },
);
const text = readFileSync(tap, "utf8");
const count = (k) => Number(text.match(new RegExp(`^# ${k} (\\d+)$`, "m"))?.[1] ?? 0);
const passed = count("pass");
const failed = count("fail") + count("cancelled");
console.log(`${passed} passed, ${failed} failed`);
process.exit(res.status !== 0 || failed > 0 || passed === 0 ? 1 : 0);
