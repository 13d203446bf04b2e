// Every package README's ```js example runs as a user would run it (from the package directory, importing
// the workspace packages by name) and prints what its `console.log(...); // expected` comments say.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const packages = readdirSync(join(root, "packages")).sort();

describe("README examples", () => {
  for (const name of packages) {
    const dir = join(root, "packages", name);
    const readme = join(dir, "README.md");
    it(`packages/${name}/README.md has a runnable example that prints what it says`, () => {
      assert.ok(existsSync(readme), "README.md is missing");
      const code = readFileSync(readme, "utf8").match(/```js\n([\s\S]*?)```/)?.[1];
      assert.ok(code !== undefined, "README has no ```js example");
      const expected = [...code.matchAll(/console\.log\(.*\); \/\/ (.*)$/gm)].map((m) => m[1]);
      assert.ok(expected.length > 0, "the example states none of its output in `// ...` comments");
      const out = execFileSync(process.execPath, ["--input-type=module", "--eval", code], {
        cwd: dir,
        encoding: "utf8",
        env: { ...process.env, ZSTREAM_QUIET: "1" },
      });
      assert.deepEqual(out.trimEnd().split("\n"), expected);
    });
  }
});
