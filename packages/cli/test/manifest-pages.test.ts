import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { MANIFEST_PAGE_PREFIX, MANIFEST_PAGE_SIZE, type StreamSchema } from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";
import { type InspectReport, inspectStore, verifyStore } from "../src/index.js";
import { tempDir } from "./helpers.js";

const root = tempDir("pages");
after(() => rmSync(root, { recursive: true, force: true }));

/** An indexed store with more records than a page holds, so its manifest is paged. */
async function pagedStore(name: string): Promise<FsStore> {
  const n = MANIFEST_PAGE_SIZE + 20;
  const schema: StreamSchema = {
    dims: [
      ["time", 0],
      ["x", 2],
    ],
    time_dim: "time",
    time_mode: { indexed: { times: Array.from({ length: n }, (_, i) => i) } },
    vars: [{ name: "v", dims: ["time", "x"], dtype: "float32" }],
    statics: [],
    chunk_shape: { time: 1, x: 2 },
    shard_shape: { time: 4, x: 2 },
    profile: "diagnostic",
  };
  const store = new FsStore(join(root, name));
  const w = await ZarrStreamWriter.create(store, schema, { kind: "single" });
  for (const i of [0, 1, n - 1]) await w.writeRecordAt(i, i, { v: Float32Array.of(i, i) });
  await w.close();
  return store;
}

test("inspect counts a paged manifest's pages as committed, not as leftovers", async () => {
  const store = await pagedStore("inspect.zarr");
  const r = (await inspectStore(store)) as InspectReport;
  assert.equal(r.format, "zarr-stream");
  assert.equal(r.manifest.pages, 2);
  assert.deepEqual(
    r.uncommitted.filter((u) => u.key.startsWith(MANIFEST_PAGE_PREFIX)),
    [],
  );
  assert.equal(r.records.count, 3);
});

test("verify resolves a paged manifest, and names a missing or altered page", async () => {
  const store = await pagedStore("verify.zarr");
  const good = await verifyStore(store);
  assert.deepEqual(good.problems, []);
  const [first, second] = (await store.list(MANIFEST_PAGE_PREFIX)).sort();
  await store.put(first!, new TextEncoder().encode("[]"));
  const altered = await verifyStore(store);
  assert.equal(altered.ok, false);
  assert.equal(altered.problems[0]?.key, first);
  await store.delete(second!);
  await store.delete(first!);
  const missing = await verifyStore(store);
  assert.ok(
    missing.problems.some((p) => p.key.startsWith(MANIFEST_PAGE_PREFIX) && /missing/.test(p.problem)),
  );
});
