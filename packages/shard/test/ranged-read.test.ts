import assert from "node:assert/strict";
import { test } from "node:test";
import { profileCodec } from "@zarr-stream/codecs";
import { CorruptShard, type DType } from "@zarr-stream/spec";
import { MemoryStore, type ReadCost } from "@zarr-stream/store";
import {
  type ArrayLayout,
  allocTyped,
  decodeShard,
  encodeShard,
  LOCAL_PIECE,
  LOCAL_SHARD_WINDOW,
  type ReadTarget,
  readShardInto,
  readShardRegion,
  SHARD_WINDOW,
  shardBytesBound,
  shardIndexByteLength,
  shardKey,
} from "../src/index.js";
import {
  bytesOf,
  countingStore,
  entryOf,
  layoutOf,
  naiveCopy,
  product,
  randomBytes,
  readCount,
  withEntry,
} from "./helpers.js";

const REMOTE: ReadCost = "per-request";

/**
 * One time shard of the benchmark's shape, scaled: `t` records of a (y, x) grid, chunks of one record and
 * a quarter of the grid, so a record's region is 4 adjacent bodies. Random bytes: the bodies are stored,
 * so the shard's size is its raw size.
 */
async function timeShard(
  t: number,
  y: number,
  x: number,
  dtype: DType = "float64",
  indexLocation?: "start" | "end",
) {
  const layout: ArrayLayout = {
    ...layoutOf({
      shape: [t, y, x],
      shardShape: [t, y, x],
      chunkShape: [1, y / 2, x / 2],
      dtype,
      codec: profileCodec("diagnostic", dtype),
    }),
    ...(indexLocation && { indexLocation }),
  };
  const data = allocTyped(dtype, t * y * x);
  bytesOf(data).set(randomBytes(data.byteLength, t * y + x));
  const bytes = await encodeShard(layout, [0, 0, 0], data);
  return { layout, data, bytes, key: shardKey("v", [0, 0, 0]) };
}

type Shard = Awaited<ReturnType<typeof timeShard>>;

/** The box `sel` cut out of the shard's data element by element: what any read must return. */
function expected(s: Shard, sel: [number, number][]) {
  const count = sel.map(([a, b]) => b - a);
  const want = allocTyped(s.layout.dtype, product(count));
  naiveCopy(
    s.data,
    s.layout.shardShape,
    sel.map(([a]) => a),
    want,
    count,
    count.map(() => 0),
    count,
  );
  return bytesOf(want);
}

/** Reads `sel` of the shard through a counting store whose reads cost `readCost` (default: MemoryStore's). */
async function readThrough(s: Shard, readCost: ReadCost | undefined, sel: [number, number][]) {
  const { store, log } = countingStore(new MemoryStore(), readCost);
  await store.put(s.key, s.bytes);
  const got = await readShardRegion(store, s.key, s.layout, [0, 0, 0], sel);
  assert.ok(got);
  assert.deepEqual(bytesOf(got), expected(s, sel));
  return { reads: readCount(log), log };
}

const record = (s: Shard, r: number): [number, number][] => [
  [r, r + 1],
  [0, s.layout.shape[1]!],
  [0, s.layout.shape[2]!],
];

test("§1 a record's region of a shard inside the window costs one read, on local and remote stores", async () => {
  const small = await timeShard(4, 32, 48); // 48 KiB
  assert.ok(small.bytes.byteLength < LOCAL_SHARD_WINDOW);
  const mid = await timeShard(8, 96, 160); // 960 KiB
  assert.ok(LOCAL_SHARD_WINDOW < mid.bytes.byteLength && mid.bytes.byteLength < SHARD_WINDOW);
  for (const r of [0, 2, 3]) {
    assert.equal((await readThrough(small, undefined, record(small, r))).reads, 1, `local, record ${r}`);
    assert.equal((await readThrough(small, REMOTE, record(small, r))).reads, 1, `remote, record ${r}`);
  }
  for (const r of [0, 5, 7]) {
    const { reads, log } = await readThrough(mid, REMOTE, record(mid, r));
    assert.deepEqual([reads, log.getSuffix], [1, 1], `remote, record ${r}`);
  }
  // A part of a record (one chunk's corner) too.
  const corner: [number, number][] = [
    [6, 7],
    [40, 50],
    [70, 90],
  ];
  assert.equal((await readThrough(mid, REMOTE, corner)).reads, 1);
});

test("§1 past the window, a record's bodies cost one more, coalesced, read", async () => {
  // Local stores keep the window small: a record of a 960 KiB shard is two reads, the bodies in one.
  const mid = await timeShard(8, 96, 160);
  for (const r of [0, 5, 7]) {
    const { log } = await readThrough(mid, undefined, record(mid, r));
    assert.equal(log.getSuffix, 1);
    assert.equal(log.getRange.length, 1, `local, record ${r}: 4 adjacent bodies in one range read`);
    const first = entryOf(mid.layout, mid.bytes, 4 * r);
    const last = entryOf(mid.layout, mid.bytes, 4 * r + 3);
    assert.deepEqual(log.getRange[0], {
      offset: Number(first.offset),
      // the bodies, and the index's length past them to check they stop short of the index
      length: Number(last.offset + last.nbytes - first.offset) + shardIndexByteLength(mid.layout),
    });
  }
  // Remote: a shard over SHARD_WINDOW (5 MiB here), a record far from the index.
  const big = await timeShard(8, 256, 320);
  assert.ok(big.bytes.byteLength > SHARD_WINDOW);
  const first = await readThrough(big, REMOTE, record(big, 0));
  assert.deepEqual([first.reads, first.log.getSuffix, first.log.getRange.length], [2, 1, 1]);
});

test("§1 reading a whole shard is one read on any store while it fits the wide window", async () => {
  const mid = await timeShard(8, 96, 160, "float32");
  const all: [number, number][] = [
    [0, 8],
    [0, 96],
    [0, 160],
  ];
  assert.equal((await readThrough(mid, undefined, all)).reads, 1);
  assert.equal((await readThrough(mid, REMOTE, all)).reads, 1);
});

test("§1 a whole shard past the window: pieces one after another on a local store, one read on a remote one", async () => {
  const big = await timeShard(8, 256, 320); // 5 MiB of 160 KiB bodies
  assert.ok(big.bytes.byteLength > SHARD_WINDOW + LOCAL_PIECE);
  const all: [number, number][] = [
    [0, 8],
    [0, 256],
    [0, 320],
  ];
  const local = await readThrough(big, undefined, all);
  const indexLen = shardIndexByteLength(big.layout);
  const past = big.bytes.byteLength - SHARD_WINDOW;
  assert.equal(local.log.getSuffix, 1);
  assert.ok(
    local.log.getRange.length >= Math.ceil(past / LOCAL_PIECE),
    "the bodies past the window in pieces",
  );
  for (const r of local.log.getRange)
    assert.ok(r.length <= LOCAL_PIECE + indexLen, `a piece of ${r.length} bytes`);
  // The pieces cover the bodies past the window exactly once, in order.
  const ranges = local.log.getRange.map((r) => [r.offset, r.offset + r.length]);
  for (let i = 1; i < ranges.length; i++) assert.ok(ranges[i]![0]! >= ranges[i - 1]![1]! - indexLen);
  const remote = await readThrough(big, REMOTE, all);
  assert.deepEqual([remote.log.getSuffix, remote.log.getRange.length], [1, 1]);

  // One piece at a time: no body read starts before the one before it has been read and placed.
  const inner = new MemoryStore();
  await inner.put(big.key, big.bytes);
  let inFlight = 0;
  let most = 0;
  const store = {
    ...countingStore(inner).store,
    getRange: async (k: string, offset: number, length: number) => {
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, 2));
      try {
        return await inner.getRange(k, offset, length);
      } finally {
        inFlight--;
      }
    },
  };
  const got = await readShardRegion(store, big.key, big.layout, [0, 0, 0], all);
  assert.ok(got);
  assert.deepEqual(bytesOf(got), expected(big, all));
  assert.equal(most, 1);
});

test("§1 a piece holds at least 4 large chunks, so that its decode still splits over cores", async () => {
  // 16 bodies of 512 KiB: past the window (which then holds the index only) in pieces of 4 bodies.
  const big = await timeShard(4, 512, 512);
  const all: [number, number][] = [
    [0, 4],
    [0, 512],
    [0, 512],
  ];
  const local = await readThrough(big, undefined, all);
  assert.equal(local.log.getSuffix, 1);
  const pieces = local.log.getRange;
  assert.equal(pieces.length, 4, JSON.stringify(pieces));
  for (const r of pieces) assert.ok(r.length >= 4 * 512 * 1024 && r.length > LOCAL_PIECE, JSON.stringify(r));
});

test("§1 a whole shard's window is no wider than the shard can be: incompressible shards of each codec fit the bound", async () => {
  for (const profile of ["diagnostic", "checkpoint", "wasm"] as const) {
    for (const [t, y, x, dtype] of [
      [4, 32, 48, "float64"],
      [8, 96, 160, "float32"],
      [2, 6, 10, "uint8"],
    ] as const) {
      const layout = layoutOf({
        shape: [t, y, x],
        shardShape: [t, y, x],
        chunkShape: [1, y / 2, x / 2],
        dtype,
        codec: profileCodec(profile, dtype),
      });
      const data = allocTyped(dtype, t * y * x);
      bytesOf(data).set(randomBytes(data.byteLength, t + y + x));
      const bytes = await encodeShard(layout, [0, 0, 0], data);
      const bound = shardBytesBound(layout);
      assert.ok(bytes.byteLength <= bound, `${profile} ${dtype}: ${bytes.byteLength} > ${bound}`);
      assert.ok(bound < 1.05 * data.byteLength + 4096, `${profile} ${dtype}: bound ${bound} is loose`);
    }
  }
});

test("§1 index at the start: bodies inside the first read come from it, later ones cost one more read", async () => {
  const s = await timeShard(8, 32, 64, "float64", "start"); // 4 KiB chunks, 128 KiB in all
  assert.ok(s.bytes.byteLength > LOCAL_SHARD_WINDOW);
  const near = await readThrough(s, undefined, record(s, 0));
  assert.deepEqual(
    near.log.getRange.map((r) => r.offset),
    [0],
    "record 0 lies within the first read",
  );
  const far = await readThrough(s, undefined, record(s, 7));
  assert.equal(far.log.getRange.length, 2);
  assert.equal(far.log.getSuffix, 0);
});

test("§1 entries past the object or into the index are CorruptShard on the paths past the window", async () => {
  const isCorrupt = (e: unknown) => e instanceof CorruptShard && e.key === "v/c/0/0/0";
  for (const indexLocation of ["end", "start"] as const) {
    const s = await timeShard(8, 96, 160, "float64", indexLocation);
    const store = new MemoryStore();
    const last = entryOf(s.layout, s.bytes, 31);
    const size = BigInt(s.bytes.byteLength);
    const cases: [string, bigint, bigint][] = [
      ["past the end", size - 8n, 16n],
      ["far past the end", 2n ** 40n, 16n],
    ];
    if (indexLocation === "end") cases.push(["into the index", last.offset, last.nbytes + 1n]);
    for (const [what, offset, nbytes] of cases) {
      await store.put(s.key, await withEntry(s.layout, s.bytes, 31, { offset, nbytes }));
      await assert.rejects(
        readShardRegion(store, s.key, s.layout, [0, 0, 0], record(s, 7)),
        isCorrupt,
        `${indexLocation}: ${what}`,
      );
    }
  }
});

test("§1 readShardInto writes only its box of a larger target, zeroing absent chunks unless told it is zero", async () => {
  const layout = layoutOf({
    shape: [6, 10],
    shardShape: [4, 8],
    chunkShape: [2, 4],
    dtype: "int32",
    codec: profileCodec("diagnostic", "int32"),
  });
  // Shard [0, 1] holds rows 0..3, cols 8..9 of the array; its second chunk row is all zero (not stored).
  const shard = new Int32Array(32);
  for (let i = 0; i < 16; i++) shard[i] = i + 1;
  const bytes = await encodeShard(layout, [0, 1], shard);
  const store = new MemoryStore();
  await store.put("a/c/0/1", bytes);
  const full = await decodeShard(layout, bytes);
  const sel: [number, number][] = [
    [1, 4],
    [8, 10],
  ];
  const target = new Int32Array(5 * 7).fill(-7);
  const found = await readShardInto(store, "a/c/0/1", layout, [0, 1], sel, {
    data: target,
    shape: [5, 7],
    start: [2, 3],
    zeroed: false,
  });
  assert.equal(found, true);
  const want = new Int32Array(35).fill(-7);
  naiveCopy(full, [4, 8], [1, 0], want, [5, 7], [2, 3], [3, 2]);
  assert.deepEqual(target, want);
  assert.deepEqual([...want.subarray(4 * 7 + 3, 4 * 7 + 5)], [0, 0], "the absent chunk's part is zeroed");

  const untouched = new Int32Array(35).fill(-7);
  const target2 = { data: untouched, shape: [5, 7], start: [2, 3], zeroed: true };
  await readShardInto(store, "a/c/0/1", layout, [0, 1], sel, target2);
  assert.deepEqual([...untouched.subarray(4 * 7 + 3, 4 * 7 + 5)], [-7, -7], "zeroed: absent chunks skipped");
  assert.equal(
    await readShardInto(
      store,
      "a/c/1/1",
      layout,
      [1, 1],
      [
        [4, 5],
        [8, 9],
      ],
      target2,
    ),
    false,
  );

  const bads: [string, ReadTarget][] = [
    ["wrong dtype", { data: new Float32Array(35), shape: [5, 7], start: [2, 3], zeroed: true }],
    ["box past the target", { data: new Int32Array(35), shape: [5, 7], start: [3, 3], zeroed: true }],
    ["shape and length disagree", { data: new Int32Array(34), shape: [5, 7], start: [2, 3], zeroed: true }],
  ];
  for (const [what, bad] of bads) {
    await assert.rejects(
      readShardInto(store, "a/c/0/1", layout, [0, 1], sel, bad),
      { name: "SchemaError", pointer: "/target" },
      what,
    );
  }
});
