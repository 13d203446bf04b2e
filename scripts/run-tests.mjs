#!/usr/bin/env node
// Runs compiled tests with node:test and prints the closing line CI reads, `N passed, N failed`.
//   node scripts/run-tests.mjs <pkg>            one package's tests (its turbo `test` task); the TAP copy
//                                               goes to packages/<pkg>/test-output/tests.tap, which turbo caches
//   node scripts/run-tests.mjs --repo           the repository-level tests (tests/*.test.mjs), TAP to test-output/
//   node scripts/run-tests.mjs --node-lts       the unit tests of scripts/node-lts.mjs on each Node LTS release
//                                               setup put in .tools/, TAP to test-output/node-<version>.tap
//   node scripts/run-tests.mjs --summary        the totals over every TAP copy the test tasks left (run or
//                                               restored from turbo's cache), the Python package's pytest
//                                               suite's included (run-pytest.mjs), after a line naming the Node
//                                               releases they ran on: the last two lines of `npm test`
//   node scripts/run-tests.mjs [<pkg> <pkg>...] several packages (or, with none, every package and the
//                                               repository tests) in one process tree, without turbo
// Turbo prefixes each line of a task's output with the package name, so counts are read from the TAP
// copies, never from turbo's output.
import { spawnSync } from "node:child_process";
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { installedNodes, NODE_LTS_VERSIONS, nodeLtsTestFiles } from "./node-lts.mjs";

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

/** The TAP copy of the unit-test run on an LTS release. */
const ltsTap = (version) => join(root, "test-output", `node-${version}.tap`);

/** The Node release a TAP copy's run used (the `# node` line each run appends), or undefined. */
function nodeOf(tapFile) {
  return readFileSync(tapFile, "utf8").match(/^# node v(\S+)$/m)?.[1];
}

/** Runs `files` with node:test under `node`, copying the TAP to `tap`; the run's exit status. */
function runTests(node, files, tap) {
  // A copy left by an earlier run must never stand in for this one.
  rmSync(tap, { force: true });
  mkdirSync(join(tap, ".."), { recursive: true });
  const res = spawnSync(
    node,
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
  // The summary names the releases the counted tests ran on, cached runs included.
  const version = spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim();
  if (existsSync(tap)) appendFileSync(tap, `# node ${version}\n`);
  return res.status;
}

/** Prints CI's closing line and exits; a run that passed nothing fails unless `mayBeEmpty` (all skipped). */
function finish(passed, failed, ok, mayBeEmpty = false) {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(ok && failed === 0 && (passed > 0 || mayBeEmpty) ? 0 : 1);
}

if (args[0] === "--summary") {
  let passed = 0;
  let failed = 0;
  // The Python package's pytest suite (scripts/run-pytest.mjs) leaves its TAP copy beside it.
  const taps = [
    ...testedPackages().map((p) => join("packages", p, TAP_NAME)),
    TAP_NAME,
    join("python", "zarr_stream", TAP_NAME),
    ...NODE_LTS_VERSIONS.map((v) => join("test-output", `node-${v}.tap`)),
  ];
  const byNode = new Map();
  for (const tap of taps) {
    const c = countsOf(join(root, tap));
    if (c === undefined) {
      console.error(`${tap}: no finished test run (the task failed to start or crashed)`);
      failed += 1;
    } else {
      passed += c.passed;
      failed += c.failed;
      // pytest's TAP names no Node release: its tests are counted, and named apart.
      const node = tap.startsWith("python") ? undefined : (nodeOf(join(root, tap)) ?? "unknown");
      if (node !== undefined) byNode.set(node, (byNode.get(node) ?? 0) + c.passed + c.failed);
      if (c.failed > 0) console.log([`${tap}:`, ...failuresOf(join(root, tap))].join("\n"));
    }
  }
  const releases = [...byNode].sort(([a], [b]) => a.localeCompare(b, "en", { numeric: true }));
  console.log(`node versions: ${releases.map(([v, n]) => `${v} (${n} tests)`).join(", ")}`);
  finish(passed, failed, true);
}

if (args[0] === "--node-lts") {
  let passed = 0;
  let failed = 0;
  let ok = true;
  const files = nodeLtsTestFiles(root);
  for (const { version, path, installed } of installedNodes(root)) {
    const tap = ltsTap(version);
    if (!installed) {
      // As for Python and the S3 servers: a failure under CI, a skip naming the setup step elsewhere.
      const why = `Node ${version} is not installed at ${path} (node scripts/setup-node-lts.mjs)`;
      const ci = process.env.CI === "true";
      console.error(`node-lts: ${why}`);
      mkdirSync(join(tap, ".."), { recursive: true });
      writeFileSync(
        tap,
        `TAP version 13\n${ci ? "not ok" : "ok"} 1 - unit tests on Node ${version}${ci ? "" : ` # SKIP ${why}`}\n` +
          `1..1\n# pass 0\n# fail ${ci ? 1 : 0}\n# skipped ${ci ? 0 : 1}\n# node v${version}\n`,
      );
      if (ci) {
        failed += 1;
        ok = false;
      }
      continue;
    }
    console.log(`node-lts: ${files.length} test files on Node ${version}`);
    const status = runTests(path, files, tap);
    const c = countsOf(tap) ?? { passed: 0, failed: 1 };
    passed += c.passed;
    failed += c.failed;
    ok &&= status === 0;
  }
  finish(passed, failed, ok, true);
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
if (files.length === 0) {
  rmSync(tap, { force: true });
  console.error("no test files found (did the build run?)");
  finish(0, 1, false);
}
const status = runTests(process.execPath, files, tap);
const c = countsOf(tap) ?? { passed: 0, failed: 1 };
finish(c.passed, c.failed, status === 0);
