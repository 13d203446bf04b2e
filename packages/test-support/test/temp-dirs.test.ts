import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname } from "node:path";
import { before, describe, it } from "node:test";
import { tempDir, tempRoots } from "../src/temp-dirs.js";

describe("temp dirs", () => {
  let perTest = "";
  it("a directory tied to a test exists during it, under the OS temp dir, named by its label", (t) => {
    perTest = tempDir("probe", t);
    assert.ok(existsSync(perTest));
    assert.equal(dirname(perTest), tmpdir());
    assert.match(basename(perTest), /^zs-probe-/);
  });

  it("is gone once that test has ended", () => {
    assert.notEqual(perTest, "");
    assert.ok(!existsSync(perTest));
  });

  it("tempRoots hands out distinct absent paths under one base", () => {
    const { base, fresh } = tempRoots("roots");
    const a = fresh();
    const b = fresh();
    assert.notEqual(a, b);
    assert.equal(dirname(a), base);
    assert.ok(existsSync(base) && !existsSync(a));
  });
});

describe("a directory made in a before hook", () => {
  let dir = "";
  before(() => {
    dir = tempDir("hook");
  });
  it("outlives the hook and is there for every test of the file", () => {
    assert.ok(existsSync(dir));
  });
  it("is still there for the next test", () => {
    assert.ok(existsSync(dir));
  });
});

it("a directory without a test context is removed when the test file's process exits", () => {
  const script = `
    import { tempDir } from ${JSON.stringify(new URL("../src/temp-dirs.js", import.meta.url).href)};
    console.log(tempDir("exit"));
  `;
  const res = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
  assert.equal(res.status, 0, res.stderr);
  const dir = res.stdout.trim();
  assert.match(basename(dir), /^zs-exit-/);
  assert.ok(!existsSync(dir));
});
