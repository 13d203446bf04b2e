import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { profileCodec } from "@zarr-stream/codecs";
import { type ArrayLayout, arrayZarrJson, encodeShard, encodeZarrJson, shardKey } from "@zarr-stream/shard";
import { NotCommitted, type OutputManifestV2, SchemaError } from "@zarr-stream/spec";
import { MemoryStore, type Store } from "@zarr-stream/store";
import {
  readArrayLayout,
  readArrayRegion,
  readBlob,
  readOutputManifest,
  readRecord,
  readStatic,
} from "../src/index.js";
import { putGridArray } from "./helpers.js";

/**
 * A store built by hand (the reader sits below the writer): u[time 4, y 6, x 8] float64 with shards
 * {2, 3, 4} and chunks {1, 3, 2}; value = 1000*t + 10*y + x. A static `area` [y, x] and one blob.
 */
async function handBuiltStore(): Promise<{ store: Store; reads: { key: string; kind: string }[] }> {
  const inner = new MemoryStore();
  const layout = await putGridArray(inner, "u", [4, 6, 8], (t, y, x) => 1000 * t + 10 * y + x);
  const areaLayout: ArrayLayout = {
    ...layout,
    shape: [6, 8],
    shardShape: [6, 8],
    chunkShape: [3, 4],
    dimensionNames: ["y", "x"],
    dtype: "float32",
    codec: profileCodec("diagnostic", "float32"),
  };
  await inner.put("area/zarr.json", encodeZarrJson(arrayZarrJson(areaLayout)));
  await inner.put(
    shardKey("area", [0, 0]),
    await encodeShard(
      areaLayout,
      [0, 0],
      Float32Array.from({ length: 48 }, (_, i) => i / 2),
    ),
  );
  await inner.put("blobs/static/1/rng", Uint8Array.of(4, 2));
  const manifest: OutputManifestV2 = {
    schema: "earthsciio/output-manifest/v2",
    base_url: "memory://hand",
    format: "zarr",
    zarr_format: 3,
    profile: "diagnostic",
    codec: { id: "blosc", cname: "zstd", clevel: 5, shuffle: "shuffle" },
    time_dim: "time",
    dims: [
      { name: "time", length: 3 },
      { name: "y", length: 6 },
      { name: "x", length: 8 },
    ],
    vars: [{ name: "u", dims: ["time", "y", "x"], dtype: "float64" }],
    chunk_shape: { time: 1, y: 3, x: 2 },
    shard_shape: { time: 2, y: 3, x: 4 },
    time_shards: [
      { index: 0, t_start: 0, t_end: 1, n: 2 },
      { index: 1, t_start: 2, t_end: 2, n: 1 },
    ],
    last_t: 2,
    n_records: 3,
    created_at: "2026-12-02T00:00:00Z",
    fingerprint: `sha256:${"a".repeat(64)}`,
    time_mode: "append",
    n_writers: 2,
    region_dims: ["y"],
    commit_seq: 2,
    statics: [{ name: "area", dims: ["y", "x"], dtype: "float32" }],
    statics_committed: ["area"],
    blobs: [{ scope: "static", writer: 1, key: "rng" }],
  };
  await inner.put("output_manifest.json", new TextEncoder().encode(JSON.stringify(manifest)));
  const reads: { key: string; kind: string }[] = [];
  const note = (kind: string, key: string) => {
    reads.push({ key, kind });
  };
  const store: Store = {
    url: inner.url,
    get: (k) => {
      note("get", k);
      return inner.get(k);
    },
    getRange: (k, o, n) => {
      note("range", k);
      return inner.getRange(k, o, n);
    },
    getSuffix: (k, n) => {
      note("suffix", k);
      return inner.getSuffix(k, n);
    },
    size: (k) => inner.size(k),
    put: (k, b) => inner.put(k, b),
    putIfAbsent: (k, b) => inner.putIfAbsent(k, b),
    delete: (k) => inner.delete(k),
    list: (p) => inner.list(p),
  };
  return { store, reads };
}

describe("§7 read-back", () => {
  it("readRecord returns the region of a committed record, time dim removed", async () => {
    const { store } = await handBuiltStore();
    const r = await readRecord(store, "u", 2, { y: [2, 5], x: [3, 6] });
    assert.deepEqual(r.shape, [3, 3]);
    assert.deepEqual(r.dims, ["y", "x"]);
    assert.deepEqual(
      Array.from(r.data as Float64Array),
      [2023, 2024, 2025, 2033, 2034, 2035, 2043, 2044, 2045],
    );
  });

  it("reads each shard the region touches with one suffix read (small shards arrive whole with their index)", async () => {
    const { store, reads } = await handBuiltStore();
    const m = await readOutputManifest(store);
    reads.length = 0;
    await readRecord(store, "u", 1, { y: [0, 3], x: [0, 4] }, { manifest: m });
    const shardReads = () =>
      reads
        .filter((r) => r.key.startsWith("u/c/"))
        .map((r) => `${r.kind} ${r.key}`)
        .sort();
    assert.deepEqual(shardReads(), ["suffix u/c/0/0/0"]);
    reads.length = 0;
    await readRecord(store, "u", 0, { y: [0, 6], x: [2, 6] }, { manifest: m });
    assert.deepEqual(shardReads(), [
      "suffix u/c/0/0/0",
      "suffix u/c/0/0/1",
      "suffix u/c/0/1/0",
      "suffix u/c/0/1/1",
    ]);
  });

  it("uncommitted records, statics and blobs raise NotCommitted; bad arguments raise SchemaError", async () => {
    const { store } = await handBuiltStore();
    await assert.rejects(readRecord(store, "u", 3), NotCommitted); // in the array, beyond the committed count
    await assert.rejects(readBlob(store, "static", 0, "rng"), NotCommitted);
    await assert.rejects(readBlob(store, { record: 0 }, 1, "rng"), NotCommitted);
    await assert.rejects(readRecord(store, "v", 0), SchemaError);
    await assert.rejects(readRecord(store, "u", -1), SchemaError);
    await assert.rejects(readRecord(store, "u", 0, { time: [0, 1] }), SchemaError);
    await assert.rejects(readRecord(store, "u", 0, { y: [0, 7] }), SchemaError);
    await assert.rejects(readBlob(store, "static", 1, "../x"), SchemaError);
  });

  it("readStatic and readBlob return committed data", async () => {
    const { store } = await handBuiltStore();
    const a = await readStatic(store, "area", { y: [1, 2] });
    assert.deepEqual(Array.from(a.data as Float32Array), [4, 4.5, 5, 5.5, 6, 6.5, 7, 7.5]);
    assert.deepEqual(Array.from(await readBlob(store, "static", 1, "rng")), [4, 2]);
  });

  it("readArrayRegion reads any box across shards, and empty boxes", async () => {
    const { store } = await handBuiltStore();
    const layout = await readArrayLayout(store, "u");
    const box = await readArrayRegion(store, "u", layout, [
      [1, 3],
      [2, 4],
      [3, 5],
    ]);
    assert.deepEqual(Array.from(box as Float64Array), [1023, 1024, 1033, 1034, 2023, 2024, 2033, 2034]);
    assert.equal(
      (
        await readArrayRegion(store, "u", layout, [
          [0, 0],
          [0, 6],
          [0, 8],
        ])
      ).length,
      0,
    );
    await assert.rejects(
      readArrayRegion(store, "u", layout, [
        [0, 5],
        [0, 6],
        [0, 8],
      ]),
      SchemaError,
    );
  });

  it("readArrayRegion reads an absent shard as fill, the shards around it in place", async () => {
    const { store } = await handBuiltStore();
    await store.delete(shardKey("u", [1, 0, 1]));
    const layout = await readArrayLayout(store, "u");
    const box = await readArrayRegion(store, "u", layout, [
      [1, 3],
      [2, 4],
      [3, 5],
    ]);
    // shard [1, 0, 1] held time 2, y 0..2, x 4..7
    assert.deepEqual(Array.from(box as Float64Array), [1023, 1024, 1033, 1034, 2023, 0, 2033, 2034]);
  });

  it("a manifest that fails its schema is refused", async () => {
    const store = new MemoryStore();
    await store.put(
      "output_manifest.json",
      new TextEncoder().encode('{"schema":"earthsciio/output-manifest/v2"}'),
    );
    await assert.rejects(readOutputManifest(store), SchemaError);
    await store.put("output_manifest.json", new TextEncoder().encode("{not json"));
    await assert.rejects(readOutputManifest(store), SchemaError);
  });
});
