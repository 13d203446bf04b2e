import assert from "node:assert/strict";
import { test } from "node:test";
import { profileCodec } from "@zarr-stream/codecs";
import type { DType, Profile, TypedArray } from "@zarr-stream/spec";
import fc from "fast-check";
import {
  type ArrayLayout,
  allocTyped,
  decodeShard,
  encodeShard,
  LOCAL_SHARD_WINDOW,
  readShardRegion,
  shardGrid,
  shardIndexByteLength,
  shardKey,
} from "../src/index.js";
import {
  ALL_DTYPES,
  availableBackends,
  bytesOf,
  countingStore,
  layoutOf,
  naiveCopy,
  product,
  randomBytes,
} from "./helpers.js";

const PROFILES: Profile[] = ["diagnostic", "checkpoint", "wasm"];

/** One random sharded array, one shard of it, and a box inside that shard. */
const shardCase = fc.integer({ min: 1, max: 3 }).chain((rank) =>
  fc.record({
    seed: fc.integer({ min: 1, max: 2 ** 31 }),
    zeroChunkBits: fc.nat(),
    pick: fc.array(fc.double({ min: 0, max: 0.999, noNaN: true }), {
      minLength: 4 * rank,
      maxLength: 4 * rank,
    }),
    dims: fc.array(
      fc
        .record({ chunk: fc.integer({ min: 1, max: 4 }), perShard: fc.integer({ min: 1, max: 3 }) })
        .chain(({ chunk, perShard }) =>
          fc.record({
            chunk: fc.constant(chunk),
            shard: fc.constant(chunk * perShard),
            // ragged edges: the array rarely ends on a shard or chunk boundary
            len: fc.integer({ min: 1, max: chunk * perShard * 3 }),
          }),
        ),
      { minLength: rank, maxLength: rank },
    ),
  }),
);

type Case = typeof shardCase extends fc.Arbitrary<infer T> ? T : never;

function setup(c: Case, dtype: DType, profile: Profile) {
  const layout: ArrayLayout = layoutOf({
    shape: c.dims.map((d) => d.len),
    shardShape: c.dims.map((d) => d.shard),
    chunkShape: c.dims.map((d) => d.chunk),
    dtype,
    codec: profileCodec(profile, dtype),
  });
  const rank = c.dims.length;
  const grid = shardGrid(layout);
  const shardIndex = grid.map((g, d) => Math.floor(c.pick[d]! * g));
  // A shard buffer as a writer holds it: random bits inside the array's shape, fill (0) past its edge,
  // and some inner chunks entirely zero (these must come back although they are not stored).
  const data = allocTyped(dtype, product(layout.shardShape));
  const random = allocTyped(dtype, data.length);
  bytesOf(random).set(randomBytes(random.byteLength, c.seed));
  const valid = layout.shardShape.map((s, d) => Math.min(s, layout.shape[d]! - shardIndex[d]! * s));
  const zeros = valid.map(() => 0);
  naiveCopy(random, layout.shardShape, zeros, data, layout.shardShape, zeros, valid);
  const perShard = layout.shardShape.map((s, d) => s / layout.chunkShape[d]!);
  const blank = allocTyped(dtype, product(layout.chunkShape));
  for (let k = 0; k < product(perShard); k++) {
    if (((c.zeroChunkBits >>> (k % 31)) & 1) === 0) continue;
    const idx: number[] = [];
    let rem = k;
    for (let d = rank - 1; d >= 0; d--) {
      idx[d] = rem % perShard[d]!;
      rem = Math.floor(rem / perShard[d]!);
    }
    const origin = idx.map((i, d) => i * layout.chunkShape[d]!);
    naiveCopy(blank, layout.chunkShape, zeros, data, layout.shardShape, origin, layout.chunkShape);
  }
  const sel = valid.map((v, d): [number, number] => {
    const base = shardIndex[d]! * layout.shardShape[d]!;
    const a = Math.floor(c.pick[rank + d]! * v);
    const b = a + 1 + Math.floor(c.pick[2 * rank + d]! * (v - a));
    return [base + a, base + Math.min(b, v)];
  });
  return { layout, shardIndex, data, sel };
}

function slice(
  layout: ArrayLayout,
  shardIndex: number[],
  data: TypedArray,
  sel: [number, number][],
): TypedArray {
  const shape = sel.map(([a, b]) => b - a);
  const out = allocTyped(layout.dtype, product(shape));
  const start = sel.map(([a], d) => a - shardIndex[d]! * layout.shardShape[d]!);
  naiveCopy(
    data,
    layout.shardShape,
    start,
    out,
    shape,
    shape.map(() => 0),
    shape,
  );
  return out;
}

for (const profile of PROFILES) {
  for (const dtype of ALL_DTYPES) {
    test(`§1 encodeShard -> decodeShard and readShardRegion are bitwise (${profile}, ${dtype}, ragged edges)`, async () => {
      await fc.assert(
        fc.asyncProperty(shardCase, async (c) => {
          const { layout, shardIndex, data, sel } = setup(c, dtype, profile);
          const bytes = await encodeShard(layout, shardIndex, data);
          const decoded = await decodeShard(layout, bytes, "a/c");
          assert.deepEqual(bytesOf(decoded), bytesOf(data));

          // decoding into a dirty reusable buffer gives the same values (missing chunks are re-zeroed)
          const reused = allocTyped(dtype, data.length);
          bytesOf(reused).fill(0xa5);
          await decodeShard(layout, bytes, "a/c", reused);
          assert.deepEqual(bytesOf(reused), bytesOf(data));

          const { store, log } = countingStore();
          const key = shardKey("a", shardIndex);
          await store.put(key, bytes);
          const region = await readShardRegion(store, key, layout, shardIndex, sel);
          assert.ok(region);
          const firstCallRanges = log.getRange.length;
          const want = bytesOf(slice(layout, shardIndex, data, sel));
          assert.deepEqual(bytesOf(region), want);
          // into a dirty reusable buffer: chunks that are not stored must be re-zeroed there too
          const dirty = allocTyped(dtype, region.length);
          bytesOf(dirty).fill(0x5a);
          assert.equal(await readShardRegion(store, key, layout, shardIndex, sel, dirty), dirty);
          assert.deepEqual(bytesOf(dirty), want);
          assert.equal(log.getSuffix, 2, "one suffix read for the index per call");
          assert.equal(log.getRange.length, 2 * firstCallRanges);
          assert.equal(log.get, 0, "never a whole-object read");
          // A shard this small arrives whole with its index: nothing more to read.
          if (bytes.byteLength < LOCAL_SHARD_WINDOW) assert.equal(firstCallRanges, 0);
        }),
        { numRuns: 40 },
      );
    });
  }
}

test("§1 readShardRegion: a full contiguous row of chunks is one range read; a column of chunks is one read per chunk", async () => {
  // 4x4 chunks of 32x32 float64 (8 KiB each, incompressible) so skipped bodies are gaps over 4 KiB.
  const layout = layoutOf({
    shape: [128, 128],
    shardShape: [128, 128],
    chunkShape: [32, 32],
    dtype: "float64",
    codec: profileCodec("diagnostic", "float64"),
  });
  const data = allocTyped("float64", 128 * 128);
  bytesOf(data).set(randomBytes(data.byteLength, 42));
  const { store, log, reset } = countingStore();
  await store.put("v/c/0/0", await encodeShard(layout, [0, 0], data));

  const row = await readShardRegion(
    store,
    "v/c/0/0",
    layout,
    [0, 0],
    [
      [32, 64],
      [0, 128],
    ],
  );
  assert.deepEqual(bytesOf(row!), bytesOf(data.subarray(32 * 128, 64 * 128)));
  assert.equal(log.getSuffix, 1);
  assert.equal(log.getRange.length, 1, "4 adjacent bodies coalesce into one read");

  reset();
  const corners = await readShardRegion(
    store,
    "v/c/0/0",
    layout,
    [0, 0],
    [
      [0, 1],
      [0, 128],
    ],
  );
  assert.equal(log.getRange.length, 1, "a row inside one row of chunks");
  assert.equal(corners!.length, 128);

  reset();
  const column = await readShardRegion(
    store,
    "v/c/0/0",
    layout,
    [0, 0],
    [
      [0, 128],
      [0, 1],
    ],
  );
  assert.equal(log.getRange.length, 4, "one column of chunks: bodies 3 chunks (24 KiB) apart");
  const want = allocTyped("float64", 128);
  naiveCopy(data, [128, 128], [0, 0], want, [128, 1], [0, 0], [128, 1]);
  assert.deepEqual(bytesOf(column!), bytesOf(want));
});

test("§1 readShardRegion returns undefined for an absent object, and empty boxes read nothing", async () => {
  const layout = layoutOf({
    shape: [10],
    shardShape: [4],
    chunkShape: [2],
    dtype: "int32",
    codec: profileCodec("wasm", "int32"),
  });
  const { store, log } = countingStore();
  assert.equal(await readShardRegion(store, "x/c/1", layout, [1], [[4, 8]]), undefined);
  const empty = await readShardRegion(store, "x/c/1", layout, [1], [[5, 5]]);
  assert.equal(empty!.length, 0);
  assert.equal(log.getSuffix, 1);
});

test("§1 an all-fill shard is a valid object whose index marks every chunk missing", async () => {
  const layout = layoutOf({
    shape: [6, 5],
    shardShape: [4, 4],
    chunkShape: [2, 2],
    dtype: "float32",
    codec: profileCodec("checkpoint", "float32"),
  });
  const bytes = await encodeShard(layout, [1, 1], allocTyped("float32", 16));
  assert.equal(bytes.byteLength, shardIndexByteLength(layout));
  const idx = new DataView(bytes.buffer);
  for (let i = 0; i < 4; i++) assert.equal(idx.getBigUint64(16 * i, true), 0xffff_ffff_ffff_ffffn);
  const back = await decodeShard(layout, bytes);
  assert.ok(back.every((v) => v === 0));
});

test("§1 index_location start round-trips (decode side of arrays written that way by other tools)", async () => {
  const layout: ArrayLayout = {
    ...layoutOf({
      shape: [5, 7],
      shardShape: [4, 4],
      chunkShape: [2, 2],
      dtype: "uint64",
      codec: profileCodec("diagnostic", "uint64"),
    }),
    indexLocation: "start",
  };
  const data = allocTyped("uint64", 16);
  bytesOf(data).set(randomBytes(data.byteLength, 3));
  // shard [1, 1] holds array rows 4..7 (only 4 valid) and cols 4..7 (4..6 valid)
  const masked = allocTyped("uint64", 16);
  naiveCopy(data, [4, 4], [0, 0], masked, [4, 4], [0, 0], [1, 3]);
  const bytes = await encodeShard(layout, [1, 1], masked);
  const view = new DataView(bytes.buffer);
  assert.equal(
    Number(view.getBigUint64(0, true)),
    shardIndexByteLength(layout),
    "first body follows the index",
  );
  assert.deepEqual(bytesOf(await decodeShard(layout, bytes, "k")), bytesOf(masked));
  const { store } = countingStore();
  await store.put("k", bytes);
  const got = await readShardRegion(
    store,
    "k",
    layout,
    [1, 1],
    [
      [4, 5],
      [5, 7],
    ],
  );
  assert.deepEqual(
    [...(got as BigUint64Array)],
    [(masked as BigUint64Array)[1], (masked as BigUint64Array)[2]],
  );
});

test("§1 shards encoded on one codec backend decode bitwise on every other available backend", async () => {
  // 32 inner chunks of 32 KiB, compressed concurrently: large enough that a codec sharing buffers between
  // in-flight jobs would produce frames that do not match their index entries.
  const { codecBackend, setCodecBackend } = await import("@zarr-stream/codecs");
  const initial = codecBackend();
  const backends = await availableBackends();
  const shardShape = [4, 64, 512];
  const data = allocTyped("float64", product(shardShape)) as Float64Array;
  for (let i = 0; i < data.length; i++) data[i] = 280 + 15 * Math.sin(i / 300) + (i % 7) * 1e-3;
  try {
    for (const profile of PROFILES) {
      const layout = layoutOf({
        shape: [4, 60, 500],
        shardShape,
        chunkShape: [1, 32, 128],
        dtype: "float64",
        codec: profileCodec(profile, "float64"),
      });
      const valid = allocTyped("float64", data.length);
      naiveCopy(data, shardShape, [0, 0, 0], valid, shardShape, [0, 0, 0], [4, 60, 500]);
      for (const from of backends) {
        setCodecBackend(from);
        const bytes = await encodeShard(layout, [0, 0, 0], valid);
        for (const to of backends) {
          setCodecBackend(to);
          const back = await decodeShard(layout, bytes, "v/c/0/0/0");
          assert.ok(
            Buffer.from(bytesOf(back)).equals(Buffer.from(bytesOf(valid))),
            `${profile}: ${from} -> ${to}`,
          );
        }
      }
    }
  } finally {
    setCodecBackend(initial);
  }
});

test("§1 rank-0 arrays: one inner chunk, key <array>/c, encoded and read back", async () => {
  const layout = layoutOf({
    shape: [],
    shardShape: [],
    chunkShape: [],
    dtype: "int64",
    codec: profileCodec("wasm", "int64"),
  });
  const data = new BigInt64Array([-42n]);
  const bytes = await encodeShard(layout, [], data);
  assert.deepEqual([...(await decodeShard(layout, bytes))], [-42n]);
  const { store, log } = countingStore();
  assert.equal(shardKey("scalar", []), "scalar/c");
  await store.put("scalar/c", bytes);
  assert.deepEqual(
    [...((await readShardRegion(store, "scalar/c", layout, [], [])) as BigInt64Array)],
    [-42n],
  );
  assert.deepEqual([log.getSuffix, log.getRange.length], [1, 0], "the whole object in one read");
});

test("§1 encodeShard and readShardRegion refuse bad arguments before any I/O", async () => {
  const layout = layoutOf({
    shape: [10],
    shardShape: [4],
    chunkShape: [2],
    dtype: "float32",
    codec: profileCodec("diagnostic", "float32"),
  });
  await assert.rejects(encodeShard(layout, [0], new Float64Array(4)), {
    name: "SchemaError",
    pointer: "/data",
  });
  await assert.rejects(encodeShard(layout, [0], new Float32Array(5)), {
    name: "SchemaError",
    pointer: "/data",
  });
  await assert.rejects(encodeShard(layout, [-1], new Float32Array(4)), {
    name: "SchemaError",
    pointer: "/shardIndex/0",
  });
  const { store, log } = countingStore();
  await assert.rejects(readShardRegion(store, "v/c/2", layout, [2], [[7, 11]]), {
    name: "SchemaError",
    pointer: "/sel/0",
  });
  await assert.rejects(readShardRegion(store, "v/c/2", layout, [2], [[3, 9]]), {
    name: "SchemaError",
    pointer: "/sel/0",
  });
  await assert.rejects(readShardRegion(store, "v/c/2", layout, [2], [[8, 9]], new Float32Array(2)), {
    name: "SchemaError",
    pointer: "/out",
  });
  assert.equal(log.getSuffix + log.getRange.length + log.get, 0);
});
