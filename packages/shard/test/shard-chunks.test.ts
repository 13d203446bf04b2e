import assert from "node:assert/strict";
import { test } from "node:test";
import { profileCodec } from "@zarr-stream/codecs";
import { SchemaError, type TypedArray } from "@zarr-stream/spec";
import fc from "fast-check";
import {
  allocTyped,
  copyStrided,
  encodeShard,
  encodeShardChunks,
  encodeShardChunksKnown,
  type KnownFrames,
  parseShardIndex,
  shardIndexByteLength,
} from "../src/index.js";
import { layoutOf, product, randomBytes } from "./helpers.js";

/** Splits a C-order shard buffer into its inner chunks, each in its own C order (C order over the grid). */
function splitChunks(data: TypedArray, shardShape: number[], chunkShape: number[]): TypedArray[] {
  const grid = shardShape.map((s, d) => s / chunkShape[d]!);
  const out: TypedArray[] = [];
  for (let i = 0; i < product(grid); i++) {
    const origin: number[] = new Array(grid.length);
    let rest = i;
    for (let d = grid.length - 1; d >= 0; d--) {
      origin[d] = (rest % grid[d]!) * chunkShape[d]!;
      rest = Math.floor(rest / grid[d]!);
    }
    const chunk = allocTyped("float32", product(chunkShape));
    copyStrided(
      data,
      shardShape,
      origin,
      chunk,
      chunkShape,
      origin.map(() => 0),
      chunkShape,
    );
    out.push(chunk);
  }
  return out;
}

/**
 * A shard's geometry from random dims: per dim its inner chunk's extent, chunks per shard, and how far the
 * array ends short of the shard, so edge chunks are partial or wholly outside on some dims.
 */
const shardGeometry = (maxChunk: number, maxCut: number) =>
  fc
    .array(
      fc.record({
        chunk: fc.integer({ min: 1, max: maxChunk }),
        per: fc.integer({ min: 1, max: 3 }),
        cut: fc.nat(maxCut),
      }),
      { minLength: 1, maxLength: 3 },
    )
    .map((dims) => {
      const chunkShape = dims.map((d) => d.chunk);
      const shardShape = dims.map((d) => d.chunk * d.per);
      const shape = shardShape.map((s, i) => Math.max(1, s - dims[i]!.cut));
      return { chunkShape, shardShape, shape };
    });

test("encodeShardChunks writes the same bytes as encodeShard of the assembled shard (edges, zero chunks)", async () => {
  await fc.assert(
    fc.asyncProperty(
      shardGeometry(3, 5),
      fc.integer({ min: 1, max: 2 ** 30 }),
      fc.boolean(),
      async ({ chunkShape, shardShape, shape }, seed, zeroFirst) => {
        const layout = layoutOf({
          shape,
          shardShape,
          chunkShape,
          dtype: "float32",
          codec: profileCodec("diagnostic", "float32"),
        });
        const n = product(shardShape);
        const data = new Float32Array(randomBytes(4 * n, seed).buffer);
        if (zeroFirst) data.fill(0, 0, product(chunkShape));
        const idx = shape.map(() => 0);
        const whole = await encodeShard(layout, idx, data);
        const parts = await encodeShardChunks(layout, idx, splitChunks(data, shardShape, chunkShape));
        assert.deepEqual(parts, whole);
      },
    ),
    { numRuns: 40 },
  );
});

/** A 4 x 4 float32 array in one shard of four 2 x 2 chunks. */
const fourChunks = () =>
  layoutOf({
    shape: [4, 4],
    shardShape: [4, 4],
    chunkShape: [2, 2],
    dtype: "float32",
    codec: profileCodec("diagnostic", "float32"),
  });

test("encodeShardChunks refuses a wrong chunk count, dtype or length with a SchemaError naming the chunk", async () => {
  const layout = fourChunks();
  const ok = () => Array.from({ length: 4 }, () => new Float32Array(4));
  await assert.rejects(
    encodeShardChunks(layout, [0, 0], ok().slice(1)),
    (e: unknown) => e instanceof SchemaError && e.pointer === "/chunks",
  );
  const wrongType = ok() as TypedArray[];
  wrongType[2] = new Float64Array(4);
  await assert.rejects(
    encodeShardChunks(layout, [0, 0], wrongType),
    (e: unknown) => e instanceof SchemaError && e.pointer === "/chunks/2",
  );
  const wrongLength = ok();
  wrongLength[3] = new Float32Array(5);
  await assert.rejects(
    encodeShardChunks(layout, [0, 0], wrongLength),
    (e: unknown) => e instanceof SchemaError && e.pointer === "/chunks/3",
  );
});

test("encodeShardChunks leaves out exactly the chunks whose in-shape part is zero, whatever their padding holds", async () => {
  await fc.assert(
    fc.asyncProperty(
      shardGeometry(4, 7),
      fc.integer({ min: 1, max: 2 ** 30 }),
      async ({ chunkShape, shardShape, shape }, seed) => {
        const layout = layoutOf({
          shape,
          shardShape,
          chunkShape,
          dtype: "float32",
          codec: profileCodec("diagnostic", "float32"),
        });
        const grid = shardShape.map((s, d) => s / chunkShape[d]!);
        const noise = new Uint32Array(randomBytes(4 * product(grid) * 2, seed).buffer);
        const want: boolean[] = [];
        const chunks: TypedArray[] = [];
        for (let i = 0; i < product(grid); i++) {
          const origin: number[] = new Array(grid.length);
          let rest = i;
          for (let d = grid.length - 1; d >= 0; d--) {
            origin[d] = (rest % grid[d]!) * chunkShape[d]!;
            rest = Math.floor(rest / grid[d]!);
          }
          const valid = origin.map((o, d) => Math.max(0, Math.min(chunkShape[d]!, shape[d]! - o)));
          // Padding (past the array's edge) holds nonzero values; the in-shape part is zero but for at
          // most one element, at a random in-shape position (the last one included).
          const chunk = new Float32Array(product(chunkShape)).fill(7);
          const inShape: number[] = [];
          for (let k = 0; k < chunk.length; k++) {
            let r = k;
            let inside = true;
            for (let d = chunkShape.length - 1; d >= 0; d--) {
              if (r % chunkShape[d]! >= valid[d]!) inside = false;
              r = Math.floor(r / chunkShape[d]!);
            }
            if (inside) {
              chunk[k] = 0;
              inShape.push(k);
            }
          }
          const keep = inShape.length > 0 && noise[2 * i]! % 2 === 1;
          if (keep) chunk[inShape[noise[2 * i + 1]! % inShape.length]!] = 1;
          want.push(keep);
          chunks.push(chunk);
        }
        const bytes = await encodeShardChunks(
          layout,
          shape.map(() => 0),
          chunks,
        );
        const index = await parseShardIndex(
          layout,
          bytes.subarray(bytes.length - shardIndexByteLength(layout)),
          bytes.length,
        );
        assert.deepEqual(
          Array.from(index.nbytes, (n) => n >= 0),
          want,
        );
      },
    ),
    { numRuns: 60 },
  );
});

test("encodeShardChunksKnown writes encodeShardChunks's bytes through any sequence of chunk changes and shapes", async () => {
  await fc.assert(
    fc.asyncProperty(
      shardGeometry(3, 5),
      fc.constantFrom("diagnostic", "wasm"),
      fc.constantFrom("start", "end"),
      fc.array(
        fc.record({
          // Chunks changed (by position in the grid, modulo its size) and what they get; or a new shape.
          changed: fc.array(fc.nat(40), { maxLength: 4 }),
          zero: fc.boolean(),
          seed: fc.integer({ min: 1, max: 2 ** 30 }),
          grow: fc.boolean(),
          withOutput: fc.boolean(),
        }),
        { minLength: 1, maxLength: 6 },
      ),
      async ({ chunkShape, shardShape, shape: start }, profile, indexLocation, steps) => {
        // Grown in place by the steps: a copy, not fast-check's value.
        const shape = [...start];
        const grid = shardShape.map((s, d) => s / chunkShape[d]!);
        const size = product(chunkShape);
        const chunks = Array.from({ length: product(grid) }, (_, i) => {
          const c = new Float32Array(randomBytes(4 * size, i + 1).buffer);
          // Whole float values only: random bits include NaNs, whose bytes survive but blur the check.
          return c.map((_, k) => ((i * 31 + k) % 13) - 6);
        });
        const known: KnownFrames = { shape: undefined, frames: [] };
        let output: Uint8Array | undefined;
        const reusable = {
          take: (n: number) => {
            if (output === undefined || output.length < n) output = new Uint8Array(n);
            return output;
          },
        };
        for (const step of steps) {
          if (step.grow) shape[0] = Math.min(shardShape[0]!, shape[0]! + 1);
          const before = [...known.frames];
          for (const at of step.changed) {
            const i = at % chunks.length;
            const fresh = new Float32Array(randomBytes(4 * size, step.seed + i).buffer).map(
              (b) => (b % 9) - 4,
            );
            chunks[i] = step.zero ? new Float32Array(size) : fresh;
            known.frames[i] = undefined;
          }
          const layout = layoutOf({
            shape: [...shape],
            shardShape,
            chunkShape,
            dtype: "float32",
            codec: profileCodec(profile, "float32"),
            indexLocation,
          });
          const idx = shape.map(() => 0);
          const want = await encodeShardChunks(layout, idx, chunks);
          const got = await encodeShardChunksKnown(
            layout,
            idx,
            chunks,
            known,
            step.withOutput ? reusable : undefined,
          );
          assert.deepEqual(Uint8Array.from(got), want);
          // A chunk unchanged at an unchanged shape keeps its frame: nothing encodes it again.
          if (!step.grow)
            before.forEach((f, i) => {
              if (f && !step.changed.some((at) => at % chunks.length === i)) assert.equal(known.frames[i], f);
            });
        }
      },
    ),
    { numRuns: 60 },
  );
});

test("encodeShardChunksKnown refuses a malformed record of frames with a SchemaError at /known", async () => {
  const layout = fourChunks();
  const chunks = Array.from({ length: 4 }, () => new Float32Array(4).fill(1));
  for (const known of [null, { shape: undefined }, { shape: undefined, frames: [new Float32Array(2)] }]) {
    await assert.rejects(
      encodeShardChunksKnown(layout, [0, 0], chunks, known as unknown as KnownFrames),
      (e: unknown) => e instanceof SchemaError && e.pointer === "/known",
    );
  }
});
