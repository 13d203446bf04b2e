#!/usr/bin/env node
// Runs compiled tests with node:test and prints the closing line CI reads, `N passed, N failed`.
//   node scripts/run-tests.mjs <pkg>            one package's tests (its turbo `test` task); the TAP copy
//                                               goes to packages/<pkg>/test-output/tests.tap, which turbo caches
//   node scripts/run-tests.mjs --repo           the repository-level tests (tests/*.test.mjs), TAP to test-output/
//   node scripts/run-tests.mjs --summary        the totals over every TAP copy the test tasks left (run or
//                                               restored from turbo's cache), the Python package's pytest
//                                               suite's included (run-pytest.mjs): the last line of `npm test`
//   node scripts/run-tests.mjs [<pkg> <pkg>...] several packages (or, with none, every package and the
//                                               repository tests) in one process tree, without turbo
// Turbo prefixes each line of a task's output with the package name, so counts are read from the TAP
// copies, never from turbo's output.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const args = process.argv.slice(2);
const TAP_NAME = join("test-output", "tests.tap");

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

const repoTests = () =>
  readdirSync(join(root, "tests"))
    .filter((f) => f.endsWith(".test.mjs"))
    .map((f) => join(root, "tests", f));

/** Packages whose package.json has a test script: each one's turbo `test` task leaves a TAP copy. */
function testedPackages() {
  return readdirSync(join(root, "packages")).filter((p) => {
    const manifest = join(root, "packages", p, "package.json");
    return existsSync(manifest) && JSON.parse(readFileSync(manifest, "utf8")).scripts?.test !== undefined;
  });
}

/** pass and fail (failed or cancelled) counts of a TAP copy; undefined when the run did not finish it. */
function countsOf(tapFile) {
  if (!existsSync(tapFile)) return undefined;
  const text = readFileSync(tapFile, "utf8");
  const count = (k) => text.match(new RegExp(`^# ${k} (\\d+)$`, "m"))?.[1];
  if (count("pass") === undefined) return undefined;
  return {
    passed: Number(count("pass")),
    failed: Number(count("fail") ?? 0) + Number(count("cancelled") ?? 0),
  };
}

/**
 * The failed tests of a TAP copy, each with its location and the first lines of its error. CI keeps only
 * the tail of a run's output, so the summary repeats these where the tail shows them.
 */
function failuresOf(tapFile, maxErrorLines = 12) {
  const lines = readFileSync(tapFile, "utf8").split("\n");
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    const m = lines[i].match(/^(\s*)not ok \d+ - (.*)$/);
    if (m === null) continue;
    const indent = m[1].length;
    const detail = [];
    for (let j = i + 1; j < lines.length && detail.length < maxErrorLines; j++) {
      const line = lines[j];
      if (line.trim() === "...") break;
      if (/^\s*(location|error|failureType|code):/.test(line) || detail.length > 0) {
        if (/^\s*(stack|expected|actual|operator|code):/.test(line)) break;
        if (line.trim() !== "" && line.trim() !== "---") detail.push(line.slice(indent));
      }
    }
    out.push(`not ok - ${m[2]}`, ...detail.map((d) => `    ${d.trim()}`));
  }
  return out;
}

function finish(passed, failed, ok) {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(ok && failed === 0 && passed > 0 ? 0 : 1);
}

if (args[0] === "--summary") {
  let passed = 0;
  let failed = 0;
  // The Python package's pytest suite (scripts/run-pytest.mjs) leaves its TAP copy beside it.
  const taps = [
    ...testedPackages().map((p) => join("packages", p, TAP_NAME)),
    TAP_NAME,
    join("python", "zarr_stream", TAP_NAME),
  ];
  for (const tap of taps) {
    const c = countsOf(join(root, tap));
    if (c === undefined) {
      console.error(`${tap}: no finished test run (the task failed to start or crashed)`);
      failed += 1;
    } else {
      passed += c.passed;
      failed += c.failed;
      if (c.failed > 0) console.log([`${tap}:`, ...failuresOf(join(root, tap))].join("\n"));
    }
  }
  finish(passed, failed, true);
}

let files;
let tap;
if (args[0] === "--repo") {
  files = repoTests();
  tap = join(root, TAP_NAME);
} else {
  const packages = readdirSync(join(root, "packages")).filter((p) => args.length === 0 || args.includes(p));
  files = packages.flatMap((p) => testFiles(join(root, "packages", p, "dist", "test"))).sort();
  // Repository-level tests (plain JS, no build step) run with the full suite only.
  if (args.length === 0) files.push(...repoTests());
  tap =
    args.length === 1
      ? join(root, "packages", args[0], TAP_NAME)
      : join(mkdtempSync(join(tmpdir(), "zs-tests-")), "tests.tap");
}
// A copy left by an earlier run must never stand in for this one.
rmSync(tap, { force: true });
mkdirSync(join(tap, ".."), { recursive: true });
if (files.length === 0) {
  console.error("no test files found (did the build run?)");
  finish(0, 1, false);
}
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
const c = countsOf(tap) ?? { passed: 0, failed: 1 };
finish(c.passed, c.failed, res.status === 0);
