// Every contract section cited in the code ("§5.3") is listed in packages/spec/docs/contract-map.md, so a
// reader of the code can find the seed section and its title from the repository alone. Sections of other
// documents are cited with the document's name ("RFC 8878 §3.1.1") and are not the map's business.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const map = readFileSync(join(root, "packages/spec/docs/contract-map.md"), "utf8");
const listed = new Set([...map.matchAll(/^\| (§\d+(?:\.\d+)*) \|/gm)].map((m) => m[1]));

test("every § cited in packages/ is a row of packages/spec/docs/contract-map.md", () => {
  const files = execFileSync("git", ["ls-files", "packages"], { cwd: root, encoding: "utf8" })
    .split("\n")
    .filter((f) => /\.(ts|mjs|js|c|h|py)$/.test(f));
  const missing = new Map();
  for (const file of files) {
    const text = readFileSync(join(root, file), "utf8");
    for (const m of text.matchAll(/(RFC \d+ )?§ ?(\d+(?:\.\d+)*)/g)) {
      if (m[1] !== undefined) continue;
      const section = `§${m[2]}`;
      if (!listed.has(section)) missing.set(section, [...(missing.get(section) ?? []), file]);
    }
  }
  assert.ok(listed.size > 10, "the map lists the seed 000 sections");
  assert.deepEqual(Object.fromEntries(missing), {});
});
