import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";
import { MANIFEST_KEY, readOutputManifest } from "@zarr-stream/reader";
import {
  MANIFEST_PAGE_PREFIX,
  MANIFEST_PAGE_SIZE,
  OUTPUT_MANIFEST_V2,
  OUTPUT_MANIFEST_V2_PAGED,
  type StreamSchema,
} from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";
import { type InspectReport, inspectStore, verifyStore } from "../src/index.js";
import { SMALL_DEMO, tempDir, zstreamInProcess } from "./helpers.js";

const root = tempDir("pages");
after(() => rmSync(root, { recursive: true, force: true }));

/**
 * An indexed store with more records than a page holds: created paged, its lists are in pages; created
 * without the option, the manifest is the seed's.
 */
async function pagedStore(name: string, manifestPages = true): Promise<FsStore> {
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
  const w = await ZarrStreamWriter.create(store, schema, { kind: "single" }, {}, { manifestPages });
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

const label = async (store: FsStore) =>
  (JSON.parse(new TextDecoder().decode(await store.get(MANIFEST_KEY))) as { schema: string }).schema;

test("zstream manifest pages on|off rewrites the manifest in the other form, same committed state", async () => {
  const store = await pagedStore("switch.zarr", false);
  const dir = store.root;
  const before = await readOutputManifest(store);
  assert.equal(await label(store), OUTPUT_MANIFEST_V2);
  const on = await zstreamInProcess("manifest", "pages", "on", dir);
  assert.equal(on.status, 0, on.stderr);
  assert.match(
    on.stdout,
    /-> zarr-stream\/output-manifest\/v2-paged \(commit_seq \d+, \d+ bytes, 2 page\(s\) written\)/,
  );
  assert.equal(await label(store), OUTPUT_MANIFEST_V2_PAGED);
  const r = (await inspectStore(store)) as InspectReport;
  assert.equal(r.manifest.pages, 2);
  assert.deepEqual((await verifyStore(store)).problems, []);
  const again = await zstreamInProcess("manifest", "pages", "on", dir, "--json");
  assert.equal(again.status, 0, again.stderr);
  assert.equal(JSON.parse(again.stdout).changed, false);
  const off = await zstreamInProcess("manifest", "pages", "off", dir);
  assert.equal(off.status, 0, off.stderr);
  assert.equal(await label(store), OUTPUT_MANIFEST_V2);
  assert.deepEqual(await readOutputManifest(store), before);
  assert.deepEqual((await verifyStore(store)).problems, []);
});

test("zstream manifest: usage errors exit 2, a v1 store exits 3", async () => {
  for (const args of [["pages"], ["pages", "maybe", "x"], ["frob", "on", "x"], ["pages", "on"]]) {
    const r = await zstreamInProcess("manifest", ...args);
    assert.equal(r.status, 2, `${args.join(" ")}: ${r.stderr}`);
  }
  const v1 = new FsStore(join(root, "v1.zarr"));
  const schema: StreamSchema = {
    dims: [
      ["time", 0],
      ["x", 2],
    ],
    time_dim: "time",
    time_mode: "append",
    vars: [{ name: "v", dims: ["time", "x"], dtype: "float32" }],
    statics: [],
    chunk_shape: { time: 1, x: 2 },
    shard_shape: { time: 1, x: 2 },
    profile: "diagnostic",
  };
  const w = await ZarrStreamWriter.create(v1, schema, { kind: "single" });
  await w.writeRecord(0, { v: Float32Array.of(0, 0) });
  await w.close();
  const r = await zstreamInProcess("manifest", "pages", "on", v1.root);
  assert.equal(r.status, 3);
  assert.match(r.stderr, /ProtocolError: .*only a v2 manifest has a paged form/);
});

test("zstream demo --manifest-pages creates the store paged", async () => {
  const out = join(root, "demo-paged.zarr");
  const r = await zstreamInProcess("demo", "--out", out, ...SMALL_DEMO, "--manifest-pages", "--json");
  assert.equal(r.status, 0, r.stderr);
  assert.equal(await label(new FsStore(out)), OUTPUT_MANIFEST_V2_PAGED);
});
