import assert from "node:assert/strict";
import { test } from "node:test";
import { profileCodec } from "@zarr-stream/codecs";
import { type ArrayLayout, arrayZarrJson, encodeShard, encodeZarrJson, shardKey } from "@zarr-stream/shard";
import { MemoryStore } from "@zarr-stream/store";
import fc from "fast-check";
import { readArrayLayout, readArrayRegion } from "../src/index.js";

// readArrayRegion hands out memory it did not zero-fill (zeroing costs a whole pass), so every element must be decoded or
// zeroed as fill. Absent chunks (all-zero chunks are not stored) and absent shard objects are where a
// missed element would show, as leftover bytes of earlier allocations.

const layout: ArrayLayout = {
  shape: [6, 9, 10],
  shardShape: [2, 6, 4],
  chunkShape: [1, 3, 2],
  dtype: "float64",
  codec: profileCodec("diagnostic", "float64"),
  dimensionNames: ["time", "y", "x"],
  attributes: {},
};
const grid = layout.shape.map((n, d) => Math.ceil(n / layout.shardShape[d]!));
const nShards = grid[0]! * grid[1]! * grid[2]!;

/** value(t, y, x) = 1 + t*100 + y*10 + x/10, or 0 inside a chunk chosen to be all zero (so not stored). */
function cellValue(zeroChunks: Set<string>, t: number, y: number, x: number): number {
  const c = [t, y, x].map((v, d) => Math.floor(v / layout.chunkShape[d]!)).join(",");
  return zeroChunks.has(c) ? 0 : 1 + t * 100 + y * 10 + x / 10;
}

async function buildStore(zeroChunks: Set<string>, absentShards: Set<number>) {
  const store = new MemoryStore();
  await store.put("v/zarr.json", encodeZarrJson(arrayZarrJson(layout)));
  const [S0, S1, S2] = layout.shardShape as [number, number, number];
  for (let s = 0; s < nShards; s++) {
    if (absentShards.has(s)) continue;
    const idx = [Math.floor(s / (grid[1]! * grid[2]!)), Math.floor(s / grid[2]!) % grid[1]!, s % grid[2]!];
    const data = new Float64Array(S0 * S1 * S2);
    for (let t = 0; t < S0; t++)
      for (let y = 0; y < S1; y++)
        for (let x = 0; x < S2; x++) {
          const [at, ay, ax] = [idx[0]! * S0 + t, idx[1]! * S1 + y, idx[2]! * S2 + x];
          const inside = at < layout.shape[0]! && ay < layout.shape[1]! && ax < layout.shape[2]!;
          data[(t * S1 + y) * S2 + x] = inside ? cellValue(zeroChunks, at, ay, ax) : 0;
        }
    await store.put(shardKey("v", idx), await encodeShard(layout, idx, data));
  }
  return store;
}

/** Leaves freed, non-zero memory of about `bytes` around for the next unfilled allocation to pick up. */
function dirtyHeap(bytes: number): void {
  for (let i = 0; i < 4; i++) Buffer.allocUnsafeSlow(Math.max(8, bytes)).fill(0x5a);
}

const dimRange = (n: number) =>
  fc.tuple(fc.nat(n), fc.nat(n)).map(([a, b]) => [Math.min(a, b), Math.max(a, b)] as [number, number]);

test("readArrayRegion: every element of any box is its value or fill, with absent chunks and shards", async () => {
  const chunkIds: string[] = [];
  for (let t = 0; t < 6; t++)
    for (let y = 0; y < 3; y++) for (let x = 0; x < 5; x++) chunkIds.push(`${t},${y},${x}`);
  await fc.assert(
    fc.asyncProperty(
      fc.subarray(chunkIds, { maxLength: 30 }),
      fc.subarray(
        Array.from({ length: nShards }, (_, i) => i),
        { maxLength: 6 },
      ),
      fc.array(fc.tuple(dimRange(6), dimRange(9), dimRange(10)), { minLength: 1, maxLength: 4 }),
      async (zeros, absent, boxes) => {
        const zeroChunks = new Set(zeros);
        const absentShards = new Set(absent);
        const store = await buildStore(zeroChunks, absentShards);
        const read = await readArrayLayout(store, "v");
        for (const sel of boxes) {
          const n = sel.reduce((p, [a, b]) => p * (b - a), 1);
          dirtyHeap(n * 8);
          const got = await readArrayRegion(store, "v", read, sel);
          const want: number[] = [];
          for (let t = sel[0][0]; t < sel[0][1]; t++)
            for (let y = sel[1][0]; y < sel[1][1]; y++)
              for (let x = sel[2][0]; x < sel[2][1]; x++) {
                const s = (Math.floor(t / 2) * grid[1]! + Math.floor(y / 6)) * grid[2]! + Math.floor(x / 4);
                want.push(absentShards.has(s) ? 0 : cellValue(zeroChunks, t, y, x));
              }
          assert.deepEqual(Array.from(got as Float64Array), want, JSON.stringify(sel));
        }
      },
    ),
    { numRuns: 60 },
  );
});
