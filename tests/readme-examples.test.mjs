// Every package README's first ```ts example that states its output runs as a user would run it (from the
// package directory, importing the workspace packages by name, types erased) and prints what its
// `console.log(...); // expected` comments say. That every example also compiles under `tsc --strict`
// against the packed packages is tests/readme-types.test.mjs.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { jsBlocks, runnable, statedOutput, tsBlocks } from "@zarr-stream/test-support/readme";

const root = fileURLToPath(new URL("..", import.meta.url));
const packages = readdirSync(join(root, "packages")).sort();

describe("README examples", () => {
  for (const name of packages) {
    const dir = join(root, "packages", name);
    const readme = join(dir, "README.md");
    it(`packages/${name}/README.md has a runnable example that prints what it says`, () => {
      assert.ok(existsSync(readme), "README.md is missing");
      const text = readFileSync(readme, "utf8");
      assert.deepEqual(
        jsBlocks(text),
        [],
        "code examples are ```ts blocks (type-checked), API listings ```text",
      );
      const code = tsBlocks(text).find((c) => statedOutput(c).length > 0);
      assert.ok(code !== undefined, "README has no ```ts example stating its output in `// ...` comments");
      const out = execFileSync(process.execPath, ["--input-type=module", "--eval", runnable(code)], {
        cwd: dir,
        encoding: "utf8",
        env: { ...process.env, ZSTREAM_QUIET: "1" },
      });
      assert.deepEqual(out.trimEnd().split("\n"), statedOutput(code));
    });
  }
});
