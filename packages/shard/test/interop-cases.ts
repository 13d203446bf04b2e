import { profileCodec } from "@zarr-stream/codecs";
import type { DType, Profile, TypedArray } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import {
  type ArrayLayout,
  allocTyped,
  arrayZarrJson,
  copyStrided,
  decodeShard,
  encodeShard,
  encodeZarrJson,
  groupZarrJson,
  parseArrayZarrJson,
  readShardRegion,
  shardGrid,
  shardKey,
} from "../src/index.js";
import { bytesOf, naiveCopy, product, randomBytes } from "./helpers.js";

export interface ArrayCase {
  name: string;
  profile: Profile;
  dtype: DType;
  dims: string[];
  shape: number[];
  shardShape: number[];
  chunkShape: number[];
}

/** Several dtypes, every profile, ragged edges in every dim, and the time axis not always first. */
export const CASES: ArrayCase[] = [
  {
    name: "temperature",
    profile: "diagnostic",
    dtype: "float64",
    dims: ["time", "lat", "lon"],
    shape: [5, 7, 9],
    shardShape: [2, 4, 4],
    chunkShape: [1, 2, 2],
  },
  {
    name: "pressure",
    profile: "checkpoint",
    dtype: "float32",
    dims: ["lat", "time"],
    shape: [6, 5],
    shardShape: [4, 2],
    chunkShape: [2, 1],
  },
  {
    name: "counts",
    profile: "wasm",
    dtype: "int64",
    dims: ["x", "time", "y"],
    shape: [3, 7, 10],
    shardShape: [2, 3, 4],
    chunkShape: [1, 3, 2],
  },
  {
    name: "mask",
    profile: "diagnostic",
    dtype: "uint8",
    dims: ["cell"],
    shape: [1000],
    shardShape: [256],
    chunkShape: [64],
  },
  {
    name: "ids",
    profile: "wasm",
    dtype: "int32",
    dims: ["time", "site"],
    shape: [9, 11],
    shardShape: [4, 6],
    chunkShape: [2, 3],
  },
  {
    name: "big",
    profile: "checkpoint",
    dtype: "uint64",
    dims: ["a", "b"],
    shape: [5, 5],
    shardShape: [4, 4],
    chunkShape: [2, 2],
  },
  {
    name: "flags",
    profile: "diagnostic",
    dtype: "uint32",
    dims: ["a"],
    shape: [17],
    shardShape: [8],
    chunkShape: [4],
  },
];

export function layoutOfCase(c: ArrayCase): ArrayLayout {
  return {
    shape: c.shape,
    shardShape: c.shardShape,
    chunkShape: c.chunkShape,
    dtype: c.dtype,
    codec: profileCodec(c.profile, c.dtype),
    dimensionNames: c.dims,
    attributes: { long_name: c.name, units: "1" },
  };
}

/** Random bits (NaN payloads included) with a zeroed slab so some inner chunks and shards are all fill. */
export function caseData(c: ArrayCase, seed: number): TypedArray {
  const data = allocTyped(c.dtype, product(c.shape));
  bytesOf(data).set(randomBytes(data.byteLength, seed));
  const slab = c.shape.map((n, d) => (d === 0 ? Math.min(n, c.shardShape[0]!) : n));
  const zeros = allocTyped(c.dtype, product(slab));
  naiveCopy(
    zeros,
    slab,
    slab.map(() => 0),
    data,
    c.shape,
    c.shape.map(() => 0),
    slab,
  );
  return data;
}

function forEachShard(grid: number[], visit: (idx: number[]) => void): void {
  const n = product(grid);
  for (let k = 0; k < n; k++) {
    const idx: number[] = [];
    let rem = k;
    for (let d = grid.length - 1; d >= 0; d--) {
      idx[d] = rem % grid[d]!;
      rem = Math.floor(rem / grid[d]!);
    }
    visit(idx);
  }
}

/** The part of shard `idx` inside the array: its origin and extent. */
function shardBox(layout: ArrayLayout, idx: number[]) {
  const origin = idx.map((i, d) => i * layout.shardShape[d]!);
  const count = origin.map((o, d) => Math.min(layout.shardShape[d]!, layout.shape[d]! - o));
  return { origin, count };
}

/** Writes the array the way a zarr-stream writer does: every shard object, then zarr.json. */
export async function writeArray(
  store: Store,
  path: string,
  layout: ArrayLayout,
  data: TypedArray,
): Promise<void> {
  const writes: Promise<void>[] = [];
  forEachShard(shardGrid(layout), (idx) => {
    const { origin, count } = shardBox(layout, idx);
    const buf = allocTyped(layout.dtype, product(layout.shardShape));
    copyStrided(
      data,
      layout.shape,
      origin,
      buf,
      layout.shardShape,
      origin.map(() => 0),
      count,
    );
    writes.push(encodeShard(layout, idx, buf).then((bytes) => store.put(shardKey(path, idx), bytes)));
  });
  await Promise.all(writes);
  await store.put(`${path}/zarr.json`, encodeZarrJson(arrayZarrJson(layout)));
}

export async function writeGroup(store: Store, attrs: Record<string, unknown>): Promise<void> {
  await store.put("zarr.json", encodeZarrJson(groupZarrJson(attrs)));
}

/** Reads a whole array through parseArrayZarrJson + decodeShard (absent shards are fill). */
export async function readArrayWhole(
  store: Store,
  path: string,
): Promise<{ layout: ArrayLayout; data: TypedArray }> {
  const doc = JSON.parse(new TextDecoder().decode((await store.get(`${path}/zarr.json`))!));
  const layout = parseArrayZarrJson(doc, `${path}/zarr.json`);
  const data = allocTyped(layout.dtype, product(layout.shape));
  const shardBuf = allocTyped(layout.dtype, product(layout.shardShape));
  const zeros = layout.shape.map(() => 0);
  const shards: number[][] = [];
  forEachShard(shardGrid(layout), (idx) => shards.push(idx));
  for (const idx of shards) {
    const key = shardKey(path, idx);
    const bytes = await store.get(key);
    if (bytes === undefined) continue;
    await decodeShard(layout, bytes, key, shardBuf);
    const { origin, count } = shardBox(layout, idx);
    copyStrided(shardBuf, layout.shardShape, zeros, data, layout.shape, origin, count);
  }
  return { layout, data };
}

/**
 * Reads the box [lo, hi) of an array shard by shard through readShardRegion (the ranged path), and
 * returns it in C order.
 */
export async function readArrayBox(
  store: Store,
  path: string,
  layout: ArrayLayout,
  lo: number[],
  hi: number[],
) {
  const shape = lo.map((a, d) => hi[d]! - a);
  const out = allocTyped(layout.dtype, product(shape));
  const first = lo.map((a, d) => Math.floor(a / layout.shardShape[d]!));
  const last = hi.map((b, d) => Math.ceil(b / layout.shardShape[d]!));
  const span = first.map((f, d) => last[d]! - f);
  const shards: number[][] = [];
  forEachShard(span, (rel) => shards.push(rel.map((r, d) => r + first[d]!)));
  for (const idx of shards) {
    const sel = idx.map((s, d): [number, number] => {
      const s0 = s * layout.shardShape[d]!;
      return [Math.max(lo[d]!, s0), Math.min(hi[d]!, s0 + layout.shardShape[d]!)];
    });
    const part = await readShardRegion(store, shardKey(path, idx), layout, idx, sel);
    if (part === undefined) continue;
    const count = sel.map(([a, b]) => b - a);
    copyStrided(
      part,
      count,
      count.map(() => 0),
      out,
      shape,
      sel.map(([a], d) => a - lo[d]!),
      count,
    );
  }
  return out;
}

/** The reference slice, copied element by element. */
export function sliceBox(
  data: TypedArray,
  shape: number[],
  lo: number[],
  hi: number[],
  dtype: DType,
): TypedArray {
  const count = lo.map((a, d) => hi[d]! - a);
  const out = allocTyped(dtype, product(count));
  naiveCopy(
    data,
    shape,
    lo,
    out,
    count,
    count.map(() => 0),
    count,
  );
  return out;
}
