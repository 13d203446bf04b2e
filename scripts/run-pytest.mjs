#!/usr/bin/env node
// Runs the Python package's pytest suite (python/zarr_stream/tests) with the project's .venv and leaves a
// TAP copy at python/zarr_stream/test-output/tests.tap, which `run-tests.mjs --summary` counts with the
// node:test suites (turbo task //#test:python, cached on its inputs like the packages' test tasks).
//   node scripts/run-pytest.mjs [pytest args...]
// Without .venv, or with a .venv lacking the package or pytest (bash scripts/setup-python.sh installs
// both), the suite fails under CI and is skipped (0 passed, 0 failed, one line saying why) elsewhere.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const pkg = join(root, "python", "zarr_stream");
const out = join(pkg, "test-output");
const tap = join(out, "tests.tap");
const xml = join(out, "junit.xml");
const python = join(root, ".venv", "bin", "python");
const inCi = process.env.CI !== undefined && process.env.CI !== "" && process.env.CI !== "false";

rmSync(tap, { force: true });
rmSync(xml, { force: true });
mkdirSync(out, { recursive: true });

function finish(passed, failed) {
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
}

// The package must be importable from this checkout (the .venv may be shared by several checkouts).
const probe = existsSync(python)
  ? spawnSync(python, ["-c", "import pytest, zarr_stream; print(zarr_stream.__file__)"], { encoding: "utf8" })
  : undefined;
const where = probe?.status === 0 ? probe.stdout.trim() : undefined;
const missing =
  probe === undefined
    ? `${python} is missing`
    : where === undefined
      ? `.venv lacks pytest or zarr_stream (${probe.stderr.trim().split("\n").at(-1)})`
      : where.startsWith(join(pkg, "src"))
        ? undefined
        : `.venv's zarr_stream is ${where}, not this checkout's`;
if (missing !== undefined) {
  const why = `${missing}: run bash scripts/setup-python.sh`;
  if (inCi) {
    writeFileSync(
      tap,
      `TAP version 13\nnot ok 1 - python/zarr_stream\n  ---\n  error: '${why}'\n  ...\n1..1\n# pass 0\n# fail 1\n`,
    );
    console.error(`python/zarr_stream: ${why}`);
    finish(0, 1);
  }
  writeFileSync(tap, `TAP version 13\n1..0 # SKIP ${why}\n# pass 0\n# fail 0\n`);
  console.log(`python/zarr_stream: skipped (${why})`);
  process.exit(0);
}

const res = spawnSync(
  python,
  [
    "-m",
    "pytest",
    "-p",
    "no:cacheprovider",
    "-q",
    "-rfE",
    `--junitxml=${xml}`,
    "tests",
    ...process.argv.slice(2),
  ],
  { stdio: "inherit", cwd: pkg },
);

// junit XML to TAP: one line per test, and the `# pass` / `# fail` lines run-tests.mjs counts.
const TO_TAP = String.raw`
import sys, xml.etree.ElementTree as ET
cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
lines, passed, failed, skipped = [], 0, 0, 0
for n, c in enumerate(cases, 1):
    name = f"{c.get('classname')}::{c.get('name')}"
    bad = c.find("failure") if c.find("failure") is not None else c.find("error")
    if bad is not None:
        failed += 1
        msg = (bad.get("message") or bad.text or "").strip().splitlines()[:8]
        lines += [f"not ok {n} - {name}", "  ---", "  error: |"] + [f"    {m}" for m in msg] + ["  ..."]
    elif c.find("skipped") is not None:
        skipped += 1
        lines.append(f"ok {n} - {name} # SKIP {c.find('skipped').get('message', '')}")
    else:
        passed += 1
        lines.append(f"ok {n} - {name}")
total = passed + failed + skipped
print("\n".join(["TAP version 13", *lines, f"1..{total}", f"# tests {total}", f"# pass {passed}", f"# fail {failed}", f"# skipped {skipped}"]))
`;
if (!existsSync(xml)) {
  writeFileSync(
    tap,
    `TAP version 13\nnot ok 1 - python/zarr_stream\n  ---\n  error: 'pytest exited ${res.status} without a report'\n  ...\n1..1\n# pass 0\n# fail 1\n`,
  );
  finish(0, 1);
}
const conv = spawnSync(python, ["-c", TO_TAP, xml], { encoding: "utf8" });
if (conv.status !== 0) throw new Error(`junit to TAP failed: ${conv.stderr}`);
writeFileSync(tap, conv.stdout);
const count = (k) => Number(readFileSync(tap, "utf8").match(new RegExp(`^# ${k} (\\d+)$`, "m"))?.[1] ?? 0);
// pytest's own status catches what the report cannot show (an error at collection, a crash at exit).
finish(count("pass"), count("fail") + (res.status !== 0 && count("fail") === 0 ? 1 : 0));
