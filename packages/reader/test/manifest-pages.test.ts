import assert from "node:assert/strict";
import { test } from "node:test";
import {
  CorruptStore,
  MANIFEST_PAGE_SIZE,
  manifestPageKey,
  type OutputManifestV2,
  pageManifest,
} from "@zarr-stream/spec";
import { MemoryStore } from "@zarr-stream/store";
import { MANIFEST_KEY, manifestPageRefs, readManifestVersioned, readOutputManifest } from "../src/index.js";

const P = MANIFEST_PAGE_SIZE;
const encode = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

/** An append v2 manifest in the paged form of `nShards` one-record time shards from t = `t0`: paged past P shards. */
function appendManifest(nShards: number, t0: number): OutputManifestV2 {
  return {
    schema: "zarr-stream/output-manifest/v2-paged",
    base_url: "memory://pages",
    format: "zarr",
    zarr_format: 3,
    profile: "diagnostic",
    codec: { id: "blosc", cname: "zstd", clevel: 5, shuffle: "shuffle" },
    time_dim: "time",
    dims: [
      { name: "time", length: nShards },
      { name: "x", length: 2 },
    ],
    vars: [{ name: "u", dims: ["time", "x"], dtype: "float64" }],
    chunk_shape: { time: 1, x: 2 },
    shard_shape: { time: 1, x: 2 },
    time_shards: Array.from({ length: nShards }, (_, index) => ({
      index,
      t_start: t0 + index,
      t_end: t0 + index,
      n: 1,
    })),
    last_t: t0 + nShards - 1,
    n_records: nShards,
    created_at: "2026-12-02T00:00:00Z",
    fingerprint: `sha256:${"a".repeat(64)}`,
    time_mode: "append",
    n_writers: 1,
    region_dims: [],
    commit_seq: 1,
    statics: [],
    statics_committed: [],
    blobs: [],
  };
}

/** Puts the paged form of `m` (pages, then the manifest) into `store`; returns the page keys. */
async function putPaged(store: MemoryStore, m: OutputManifestV2): Promise<string[]> {
  const { manifest, pages } = pageManifest(m);
  const keys = pages.map((p) => manifestPageKey("time_shards", p.ref.sha256));
  for (const [i, p] of pages.entries()) await store.put(keys[i]!, p.bytes);
  await store.put(MANIFEST_KEY, encode(manifest));
  return keys;
}

test("a paged manifest reads back resolved, and names the pages it was stored with", async () => {
  const store = new MemoryStore();
  const m = appendManifest(2 * P + 3, 1000);
  const keys = await putPaged(store, m);
  assert.equal(keys.length, 2);
  const read = await readOutputManifest(store);
  assert.deepEqual(read, m);
  const versioned = await readManifestVersioned(store);
  assert.deepEqual(versioned?.manifest, m);
  assert.deepEqual(
    manifestPageRefs(versioned!.manifest)?.flatMap((g) =>
      g.refs.map((r) => manifestPageKey(g.list, r.sha256)),
    ),
    keys,
  );
  assert.throws(() => {
    (read.time_shards as unknown[]).push({});
  }, TypeError);
});

test("a page missing from the manifest and from its re-read is CorruptStore naming the page", async () => {
  const store = new MemoryStore();
  const keys = await putPaged(store, appendManifest(P + 1, 5000));
  await store.delete(keys[0]!);
  await assert.rejects(
    readOutputManifest(store),
    (e) => e instanceof CorruptStore && e.key === keys[0] && e.message.includes(keys[0]!),
  );
});

test("a page collected under a reader holding an old manifest is found through the manifest read again", async () => {
  const store = new MemoryStore();
  const oldKeys = await putPaged(store, appendManifest(P + 1, 7000));
  const oldBytes = (await store.get(MANIFEST_KEY))!;
  const newer = appendManifest(P + 2, 8000);
  await putPaged(store, newer);
  for (const k of oldKeys) await store.delete(k);
  // the first manifest read (versioned, as the metadata cache reads) returns the old bytes, as if it
  // raced the owner's next commit; the read again is a plain get
  let reads = 0;
  const get = store.get.bind(store);
  const getVersioned = store.getVersioned.bind(store);
  store.getVersioned = async (key) =>
    key === MANIFEST_KEY && reads++ === 0 ? { bytes: oldBytes, version: "old" } : getVersioned(key);
  store.get = async (key) => {
    if (key === MANIFEST_KEY) reads++;
    return get(key);
  };
  assert.deepEqual(await readOutputManifest(store), newer);
  assert.equal(reads, 2);
});

test("a page whose bytes are not the ones its ref names is CorruptStore", async () => {
  const store = new MemoryStore();
  const keys = await putPaged(store, appendManifest(P + 1, 9000));
  const other = pageManifest(appendManifest(P + 1, 9500)).pages[0]!;
  await store.put(keys[0]!, other.bytes);
  await assert.rejects(readOutputManifest(store), (e) => e instanceof CorruptStore && e.key === keys[0]);
});
