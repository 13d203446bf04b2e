import assert from "node:assert/strict";
import { test } from "node:test";
import { decode, decodeBoxes, encode, profileCodec, setCodecBackend } from "@zarr-stream/codecs";
import { CorruptShard, SchemaError } from "@zarr-stream/spec";
import fc from "fast-check";
import { BACKENDS, PROFILES, rng, smoothBytes } from "./helpers.js";

const runs = Number(process.env.FC_RUNS ?? 200);
const seed = Number(process.env.FC_SEED ?? 20261203);

/*
 * A shard's worth of frames in one decodeBoxes call, as the reader decodes a shard: chunks of
 * [rows, cols] float64 stacked along the first dim of the target. With no extra target columns each
 * chunk's box is one contiguous run of the target (the native decoder writes it in place); with extra
 * columns it is strided (decoded aside, then copied). Some frames get bytes overwritten past their
 * header, which the structural checks cannot see: only the decoder finds them, possibly in a later
 * part of a call whose frames are split over the pool's threads. Per-frame decode() is the oracle.
 */
const shardCase = fc.record({
  frames: fc.integer({ min: 1, max: 10 }),
  rows: fc.integer({ min: 1, max: 24 }),
  cols: fc.integer({ min: 16, max: 96 }),
  extraCols: fc.constantFrom(0, 0, 3),
  damaged: fc.array(fc.nat(9), { maxLength: 3 }),
  seed: fc.nat(),
});

/** A copy of a Blosc frame whose first block's zstd frame has a broken magic number: only the decoder sees it. */
function breakFirstBlock(frame: Uint8Array): Uint8Array {
  const out = frame.slice();
  const start = new DataView(out.buffer).getUint32(16, true);
  out[start + 4]! ^= 0xff;
  return out;
}

/** A copy of frame with a few bytes past the 16-byte Blosc header (or the zstd frame header) replaced. */
function damage(frame: Uint8Array, seed: number): Uint8Array {
  const out = frame.slice();
  const next = rng(seed + 1);
  const from = Math.min(24, out.length - 1);
  for (let k = 0; k < 4; k++) {
    const at = from + (next() % Math.max(1, out.length - from));
    out[at] = next() & 0xff;
  }
  return out;
}

for (const backend of BACKENDS) {
  test(`decodeBoxes [${backend}]: a shard's frames in one call equal per-frame decode, damaged frames included`, async () => {
    setCodecBackend(backend);
    await fc.assert(
      fc.asyncProperty(shardCase, fc.constantFrom(...PROFILES), async (c, profile) => {
        const spec = profileCodec(profile, "float64");
        const chunkBytes = 8 * c.rows * c.cols;
        const chunks = Array.from({ length: c.frames }, (_, i) =>
          smoothBytes(chunkBytes, (c.seed % 1000) + 37 * i),
        );
        const frames = await Promise.all(chunks.map((ch) => encode(spec, ch)));
        for (const i of c.damaged) if (i < frames.length) frames[i] = damage(frames[i]!, c.seed + i);

        const oracle = await Promise.all(
          frames.map((f) => decode(spec, f, chunkBytes).catch((e: unknown) => e)),
        );
        const firstBad = oracle.findIndex((o) => !(o instanceof Uint8Array));

        const width = c.cols + c.extraCols;
        const target = new Uint8Array(8 * c.frames * c.rows * width);
        const boxes = Int32Array.from(frames.flatMap((_, i) => [0, 0, i * c.rows, 0, c.rows, c.cols]));
        const ids = frames.map((_, i) => 500 + i);
        const call = decodeBoxes(
          spec,
          frames,
          Int32Array.of(c.rows, c.cols),
          8,
          target,
          Int32Array.of(c.frames * c.rows, width),
          boxes,
          "v/c/1",
          ids,
        );
        if (firstBad >= 0) {
          assert.ok(oracle[firstBad] instanceof CorruptShard, String(oracle[firstBad]));
          await assert.rejects(call, (e: unknown) => {
            assert.ok(e instanceof CorruptShard, String(e));
            assert.equal(e.key, "v/c/1");
            assert.match(e.message, new RegExp(`^inner chunk ${500 + firstBad}: `));
            return true;
          });
          return;
        }
        await call;
        const want = new Uint8Array(target.length);
        oracle.forEach((o, i) => {
          for (let r = 0; r < c.rows; r++) {
            const row = (o as Uint8Array).subarray(8 * r * c.cols, 8 * (r + 1) * c.cols);
            want.set(row, 8 * ((i * c.rows + r) * width));
          }
        });
        assert.deepEqual(target, want);
      }),
      { numRuns: Math.ceil(runs / 2), seed },
    );
  });
}

test("decodeBoxes [native]: several calls in flight, split over the free cores or not, settle with their own results", async () => {
  setCodecBackend("native");
  const spec = profileCodec("diagnostic", "float64");
  const chunkBytes = 8 * 4096;
  const calls = Array.from({ length: 6 }, async (_, k) => {
    const chunks = Array.from({ length: 8 }, (_, i) => smoothBytes(chunkBytes, 100 * k + i));
    const frames = await Promise.all(chunks.map((ch) => encode(spec, ch)));
    // Call 3's last frame is damaged past its header: only its own call rejects.
    if (k === 3) frames[7] = breakFirstBlock(frames[7]!);
    const target = new Uint8Array(8 * chunkBytes);
    const boxes = Int32Array.from(frames.flatMap((_, i) => [0, i * 4096, 4096]));
    await decodeBoxes(spec, frames, Int32Array.of(4096), 8, target, Int32Array.of(8 * 4096), boxes);
    return { target, chunks };
  });
  const results = await Promise.allSettled(calls);
  results.forEach((r, k) => {
    if (k === 3) {
      assert.equal(r.status, "rejected");
      assert.ok((r as PromiseRejectedResult).reason instanceof CorruptShard);
      assert.match(String((r as PromiseRejectedResult).reason.message), /^inner chunk 7: /);
      return;
    }
    assert.equal(r.status, "fulfilled");
    const { target, chunks } = (r as PromiseFulfilledResult<{ target: Uint8Array; chunks: Uint8Array[] }>)
      .value;
    for (const [i, ch] of chunks.entries())
      assert.deepEqual(target.subarray(i * chunkBytes, (i + 1) * chunkBytes), ch);
  });
});

/*
 * Outputs of 1 MiB and more are written with streaming stores when 16-byte aligned, with ordinary stores
 * otherwise; both must give the same bytes for every type size with a vector path, including a tail that
 * is not a whole tile, through decode (a fresh result) and decodeBoxes (a target at an odd offset too).
 */
test("decode and decodeBoxes [native]: outputs of 1 MiB and more round-trip, aligned or not", async () => {
  setCodecBackend("native");
  for (const typesize of [2, 4, 8, 16, 3]) {
    const spec = { kind: "blosc", cname: "zstd", clevel: 5, shuffle: 1, typesize, blocksize: 0 } as const;
    const elems = Math.floor(((1 << 20) + 4096 + 40) / typesize);
    const chunk = smoothBytes(elems * typesize + 1, typesize).subarray(0, elems * typesize);
    const frame = await encode(spec, chunk);
    assert.deepEqual(await decode(spec, frame, chunk.length), chunk, `decode, typesize ${typesize}`);
    for (const offset of [0, 1, 8]) {
      const backing = new Uint8Array(2 * chunk.length + offset);
      const target = backing.subarray(offset);
      const n = chunk.length / typesize;
      await decodeBoxes(
        spec,
        [frame, frame],
        Int32Array.of(n),
        typesize,
        target,
        Int32Array.of(2 * n),
        Int32Array.of(0, 0, n, 0, n, n),
      );
      assert.deepEqual(target.subarray(0, chunk.length), chunk, `typesize ${typesize}, offset ${offset}`);
      assert.deepEqual(target.subarray(chunk.length), chunk, `typesize ${typesize}, offset ${offset}`);
    }
  }
});

/*
 * A chunk shape whose byte count is above MAX_CHUNK_BYTES is refused before any frame is decoded, as
 * decode() refuses such an expectedLength. A zstd frame without a content size passes the structural
 * checks whatever the chunk's size, and [2^16]*4 bytes is 2^64: 0 once the native job multiplies it out
 * in size_t, so the frame "decodes" to nothing and the box is copied from a chunk buffer that is not there.
 */
for (const backend of BACKENDS) {
  test(`decodeBoxes [${backend}]: a chunk shape of more than MAX_CHUNK_BYTES is a SchemaError`, async () => {
    setCodecBackend(backend);
    const spec = profileCodec("wasm", "uint8");
    // magic, frame header 0 (no content size, window byte follows), window byte, a last raw block of 0 bytes
    const empty = Uint8Array.of(0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x00, 0x01, 0x00, 0x00);
    const target = new Uint8Array(4096);
    for (const chunkShape of [Int32Array.of(65536, 65536, 65536, 65536), Int32Array.of(65536, 65536)]) {
      const rank = chunkShape.length;
      const box = [
        ...Array(rank - 1).fill(0),
        50000,
        ...Array(rank).fill(0),
        ...Array(rank - 1).fill(1),
        4096,
      ];
      await assert.rejects(
        decodeBoxes(
          spec,
          [empty],
          chunkShape,
          1,
          target,
          Int32Array.of(...Array(rank - 1).fill(1), 4096),
          Int32Array.from(box),
        ),
        SchemaError,
      );
    }
    assert.deepEqual(target, new Uint8Array(4096));
  });
}
