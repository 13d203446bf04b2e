// Every package README's ```ts examples that state their output run as a user would run them (from the
// package directory, importing the workspace packages by name, types erased) and print what their
// `console.log(...); // expected` comments say; every README has at least one. The S3 example runs in the
// store's S3 tests, against a server. That every example also compiles under `tsc --strict` against the
// packed packages is tests/readme-types.test.mjs.
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
    it(`packages/${name}/README.md: its examples run and print what they say`, () => {
      assert.ok(existsSync(readme), "README.md is missing");
      const text = readFileSync(readme, "utf8");
      assert.deepEqual(
        jsBlocks(text),
        [],
        "code examples are ```ts blocks (type-checked), API listings ```text",
      );
      const stating = tsBlocks(text).filter((c) => statedOutput(c).length > 0);
      assert.ok(stating.length > 0, "README has no ```ts example stating its output in `// ...` comments");
      for (const code of stating.filter((c) => !c.includes("s3://"))) {
        const out = execFileSync(process.execPath, ["--input-type=module", "--eval", runnable(code)], {
          cwd: dir,
          encoding: "utf8",
          env: { ...process.env, ZSTREAM_QUIET: "1" },
        });
        assert.deepEqual(
          out.trimEnd().split("\n"),
          statedOutput(code),
          code.split("\n").slice(0, 3).join("\n"),
        );
      }
    });
  }
});
