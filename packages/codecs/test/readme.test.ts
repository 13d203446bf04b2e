import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const pkg = fileURLToPath(new URL("../..", import.meta.url));

test("README: the example runs and prints the CRC-32C check value", () => {
  const readme = readFileSync(join(pkg, "README.md"), "utf8");
  const example = readme.match(/```js\n([\s\S]*?)```/)?.[1];
  assert.ok(example, "README has a js example");
  const file = join(pkg, `readme-example-${process.pid}.mjs`);
  writeFileSync(file, example);
  try {
    const res = spawnSync(process.execPath, [file], { encoding: "utf8", cwd: pkg });
    assert.equal(res.status, 0, res.stderr);
    assert.match(res.stdout, /^native 32768 → \d+ bytes 32768 e3069283$/m);
  } finally {
    rmSync(file, { force: true });
  }
});
