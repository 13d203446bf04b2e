import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { encodeZarrJson, openZarrArray, shardKey } from "@zarr-stream/shard";
import { SchemaError } from "@zarr-stream/spec";
import { MemoryStore } from "@zarr-stream/store";
import { openArray, readArrayLayout, readArrayRegion, readRecord } from "../src/index.js";
import { countingStore, gridManifest, putGridArray, putManifest } from "./helpers.js";

const value = (t: number, y: number, x: number) => 1000 * t + 10 * y + x;

/** u[time 4, y 6, x 8] float64 (see putGridArray) with every record committed. */
async function gridStore() {
  const store = new MemoryStore();
  const layout = await putGridArray(store, "u", [4, 6, 8], value);
  await putManifest(store, gridManifest(4));
  return { store, layout };
}

function expected(sel: [number, number][]): number[] {
  const got: number[] = [];
  for (let t = sel[0]![0]; t < sel[0]![1]; t++)
    for (let y = sel[1]![0]; y < sel[1]![1]; y++)
      for (let x = sel[2]![0]; x < sel[2]![1]; x++) got.push(value(t, y, x));
  return got;
}

describe("reads into the caller's out buffer", () => {
  it("readArrayRegion fills out and returns it, fill included, whatever out held before", async () => {
    const { store, layout } = await gridStore();
    await store.delete(shardKey("u", [0, 1, 0])); // an absent shard reads as fill (0)
    const sel: [number, number][] = [
      [1, 3],
      [1, 6],
      [2, 7],
    ];
    const out = new Float64Array(2 * 5 * 5).fill(Number.NaN);
    const got = await readArrayRegion(store, "u", layout, sel, { out });
    assert.equal(got, out);
    // Shard [0, 1, 0] held t in [0, 2), y in [3, 6), x in [0, 4).
    const want: number[] = [];
    for (let t = 1; t < 3; t++)
      for (let y = 1; y < 6; y++)
        for (let x = 2; x < 7; x++) want.push(t < 2 && y >= 3 && x < 4 ? 0 : value(t, y, x));
    assert.deepEqual(Array.from(out), want);
    assert.deepEqual(Array.from((await readArrayRegion(store, "u", layout, sel)) as Float64Array), want);
  });

  it("an out of the wrong dtype or size is a SchemaError at /out, before any read", async () => {
    const { store: inner, layout } = await gridStore();
    const { store, calls } = countingStore(inner);
    const sel: [number, number][] = [
      [0, 2],
      [0, 3],
      [0, 4],
    ];
    for (const out of [
      new Float32Array(24),
      new Float64Array(23),
      new Float64Array(25),
      new Int32Array(48),
    ]) {
      await assert.rejects(readArrayRegion(store, "u", layout, sel, { out }), (err: unknown) => {
        assert.ok(err instanceof SchemaError);
        assert.equal(err.pointer, "/out");
        assert.match(err.message, /float64 typed array of 24 elements/);
        return true;
      });
    }
    assert.deepEqual(calls, []);
    await assert.rejects(
      readRecord(
        store,
        "u",
        1,
        { y: [0, 3] },
        { manifest: gridManifest(4), out: new Float64Array(3 * 8 + 1) },
      ),
      (err: unknown) => err instanceof SchemaError && err.pointer === "/out",
    );
    assert.deepEqual(calls, []);
  });

  it("readRecord decodes into out; a loop reusing it reads every record right", async () => {
    const { store } = await gridStore();
    const out = new Float64Array(3 * 4);
    for (let t = 0; t < 4; t++) {
      const r = await readRecord(store, "u", t, { y: [2, 5], x: [4, 8] }, { out });
      assert.equal(r.data, out);
      assert.deepEqual(
        Array.from(out),
        expected([
          [t, t + 1],
          [2, 5],
          [4, 8],
        ]),
      );
    }
  });

  it("a read-all loop with one out allocates no buffer per read", async () => {
    const { store, layout } = await gridStore();
    const sel = (t: number): [number, number][] => [
      [t, t + 1],
      [0, 6],
      [0, 7],
    ];
    const out = new Float64Array(6 * 7);
    // Reads allocate their buffers with Buffer.allocUnsafeSlow (allocTypedUnfilled, window scratch).
    const original = Buffer.allocUnsafeSlow;
    const sizes: number[] = [];
    const count = async (withOut: boolean) => {
      sizes.length = 0;
      Buffer.allocUnsafeSlow = (n: number) => {
        sizes.push(n);
        return original(n);
      };
      try {
        for (let rep = 0; rep < 5; rep++)
          for (let t = 0; t < 4; t++)
            await readArrayRegion(store, "u", layout, sel(t), withOut ? { out } : undefined);
      } finally {
        Buffer.allocUnsafeSlow = original;
      }
      return [...sizes];
    };
    await count(true); // warms the reader's window buffers
    assert.deepEqual(await count(true), []);
    const without = await count(false);
    assert.equal(without.filter((n) => n === out.byteLength).length, 20, "the spy sees result buffers");
  });

  it("an array read through its codec pipeline (not our layout) fills out too", async () => {
    const store = new MemoryStore();
    const meta = {
      zarr_format: 3,
      node_type: "array",
      shape: [5],
      data_type: "int32",
      chunk_grid: { name: "regular", configuration: { chunk_shape: [2] } },
      chunk_key_encoding: { name: "default" },
      fill_value: -1,
      codecs: [
        { name: "bytes", configuration: { endian: "little" } },
        { name: "gzip", configuration: { level: 1 } },
      ],
    };
    await store.put("g/zarr.json", encodeZarrJson(meta));
    await store.put("g/c/0", await openZarrArray(meta).pipeline.encode(Int32Array.of(7, 8)));
    const g = await openArray(store, "g");
    const out = new Int32Array(4).fill(99);
    assert.equal(await readArrayRegion(store, "g", g, [[1, 5]], { out }), out);
    assert.deepEqual(Array.from(out), [8, -1, -1, -1]);
    await assert.rejects(readArrayRegion(store, "g", g, [[1, 5]], { out: new Int32Array(5) }), SchemaError);
    // readArrayLayout refuses this array; only our own layout has one.
    await assert.rejects(readArrayLayout(store, "g"), SchemaError);
  });
});
