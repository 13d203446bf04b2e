import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { ltsNodeBuilds } from "@zarr-stream/test-support/node-builds";
import { RegistryUnavailable, SqliteJournalRegistry } from "../src/index.js";

/*
 * better-sqlite3 is an optional peer dependency with a native addon for one Node ABI: the workspace's is
 * built for the Node that ran `npm ci`. Under another release (Node 22 and 24 from .tools/) the registry
 * must fail with RegistryUnavailable naming the rebuild, while the rest of the package still loads. An
 * install without better-sqlite3 at all is the packed-install test's (tests/packed-install.test.mjs).
 */

const nodes = await ltsNodeBuilds();
const packageDir = fileURLToPath(new URL("../../", import.meta.url));

const PROBE = `
import { composeJournal, RegistryUnavailable, SqliteJournalRegistry } from "@zarr-stream/journal";
const composed = composeJournal([new TextEncoder().encode("t,x\\r\\n0,1\\r\\n")], "csv").length;
try {
  new SqliteJournalRegistry(":memory:").close();
  console.log(JSON.stringify({ composed, opened: true }));
} catch (err) {
  console.log(JSON.stringify({ composed, name: err.name, isClass: err instanceof RegistryUnavailable, message: err.message }));
}
`;

test("SqliteJournalRegistry opens under the Node its better-sqlite3 addon was built for", () => {
  const registry = new SqliteJournalRegistry(":memory:");
  registry.close();
  assert.equal(new RegistryUnavailable("x").name, "RegistryUnavailable");
});

test(
  "under another Node release: RegistryUnavailable naming `npm rebuild better-sqlite3`, the composer still works",
  { skip: nodes.skip },
  () => {
    const builds = nodes.require();
    assert.ok(builds.length > 0);
    for (const { version, path } of builds) {
      const r = spawnSync(path, ["--input-type=module", "--eval", PROBE], {
        cwd: packageDir,
        encoding: "utf8",
      });
      assert.equal(r.status, 0, r.stderr);
      const out = JSON.parse(r.stdout) as {
        composed: number;
        name?: string;
        isClass?: boolean;
        message?: string;
      };
      assert.equal(out.composed, 10, `Node ${version}: the composer runs without the registry`);
      assert.equal(out.name, "RegistryUnavailable", `Node ${version}: ${r.stdout}`);
      assert.equal(out.isClass, true);
      assert.match(out.message!, /npm rebuild better-sqlite3/);
      assert.ok(out.message!.includes(version), out.message);
    }
  },
);
