// `engines` says what is tested: every package.json names the same Node range, whose major lines are
// exactly the releases the test command runs on (the machine's Node and scripts/node-lts.mjs), each of
// which satisfies it.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { NODE_LTS_VERSIONS } from "../scripts/node-lts.mjs";

const root = new URL("..", import.meta.url).pathname;
const manifests = [
  "package.json",
  ...readdirSync(join(root, "packages")).map((p) => join("packages", p, "package.json")),
];

/** The `^major.minor.patch` alternatives of an engines range (the only form we write). */
function caretRanges(range) {
  return range.split("||").map((part) => {
    const m = part.trim().match(/^\^(\d+)\.(\d+)\.(\d+)$/);
    assert.ok(m, `engines range part ${JSON.stringify(part.trim())} is not ^major.minor.patch`);
    return m.slice(1).map(Number);
  });
}

function satisfies(version, ranges) {
  const [a, b, c] = version.split(".").map(Number);
  return ranges.some(([x, y, z]) => a === x && (b > y || (b === y && c >= z)));
}

test("every package.json names the tested Node lines in engines, and every tested release satisfies it", () => {
  const ranges = new Map(
    manifests.map((m) => [m, JSON.parse(readFileSync(join(root, m), "utf8")).engines?.node]),
  );
  const root_ = ranges.get("package.json");
  assert.equal(typeof root_, "string", "the root package.json has engines.node");
  for (const [m, r] of ranges) assert.equal(r, root_, `${m}: engines.node`);
  const parsed = caretRanges(root_);
  const tested = [process.versions.node, ...NODE_LTS_VERSIONS];
  for (const v of tested) assert.ok(satisfies(v, parsed), `Node ${v} is tested but outside ${root_}`);
  assert.deepEqual(
    parsed.map(([major]) => major).sort((x, y) => x - y),
    [...new Set(tested.map((v) => Number(v.split(".")[0])))].sort((x, y) => x - y),
    `${root_} names a major line no test runs on, or misses one`,
  );
});
