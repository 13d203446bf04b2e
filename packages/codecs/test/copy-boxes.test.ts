import assert from "node:assert/strict";
import { test } from "node:test";
import {
  boxStride,
  copyBoxes,
  decodeBoxes,
  encode,
  profileCodec,
  setCodecBackend,
} from "@zarr-stream/codecs";
import { CorruptShard, SchemaError } from "@zarr-stream/spec";
import fc from "fast-check";
import { BACKENDS, PROFILES, randomBytes } from "./helpers.js";

const runs = Number(process.env.FC_RUNS ?? 200);
const seed = Number(process.env.FC_SEED ?? 20261202);

/** Element-by-element reference: every element of each box, by its multi-index. */
function naive(
  src: Uint8Array,
  srcShape: number[],
  dsts: Uint8Array[],
  dstShape: number[],
  itemSize: number,
  boxes: number[][],
): void {
  const rank = srcShape.length;
  const flat = (idx: number[], shape: number[]) => idx.reduce((o, i, d) => o * shape[d]! + i, 0);
  for (const [dst, s0, d0, count] of boxes.map((b) => [
    b[0]!,
    b.slice(1, 1 + rank),
    b.slice(1 + rank, 1 + 2 * rank),
    b.slice(1 + 2 * rank),
  ])) {
    const total = (count as number[]).reduce((p, n) => p * n, 1);
    for (let k = 0; k < total; k++) {
      const rel: number[] = new Array(rank);
      let rest = k;
      for (let d = rank - 1; d >= 0; d--) {
        rel[d] = rest % (count as number[])[d]!;
        rest = Math.floor(rest / (count as number[])[d]!);
      }
      const from =
        flat(
          rel.map((r, d) => r + (s0 as number[])[d]!),
          srcShape,
        ) * itemSize;
      const to =
        flat(
          rel.map((r, d) => r + (d0 as number[])[d]!),
          dstShape,
        ) * itemSize;
      dsts[dst as number]!.set(src.subarray(from, from + itemSize), to);
    }
  }
}

const boxCase = fc.integer({ min: 0, max: 4 }).chain((rank) =>
  fc
    .record({
      itemSize: fc.constantFrom(1, 2, 4, 8),
      srcShape: fc.array(fc.integer({ min: 1, max: 7 }), { minLength: rank, maxLength: rank }),
      dstShape: fc.array(fc.integer({ min: 1, max: 7 }), { minLength: rank, maxLength: rank }),
      nDst: fc.integer({ min: 1, max: 3 }),
      picks: fc.array(
        fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), {
          minLength: 3 * rank + 1,
          maxLength: 3 * rank + 1,
        }),
        { maxLength: 5 },
      ),
      seed: fc.integer({ min: 1, max: 1 << 30 }),
    })
    .map((c) => {
      // Each pick becomes a box that fits both shapes (counts may be 0).
      const boxes = c.picks.map((p) => {
        const count = c.srcShape.map((s, d) => {
          const most = Math.min(s, c.dstShape[d]!);
          return Math.min(most, Math.floor(p[d]! * (most + 1)));
        });
        const s0 = c.srcShape.map((s, d) => Math.floor(p[rank + d]! * (s - count[d]! + 1)));
        const d0 = c.dstShape.map((s, d) => Math.floor(p[2 * rank + d]! * (s - count[d]! + 1)));
        return [Math.floor(p[3 * rank]! * c.nDst) % c.nDst, ...s0, ...d0, ...count];
      });
      return { ...c, rank, boxes };
    }),
);

for (const backend of BACKENDS) {
  test(`copyBoxes [${backend}]: equals an element-by-element copy for any boxes, ranks 0-4`, async () => {
    setCodecBackend(backend);
    await fc.assert(
      fc.asyncProperty(boxCase, async (c) => {
        const size = (shape: number[]) => shape.reduce((p, n) => p * n, 1) * c.itemSize;
        const src = randomBytes(size(c.srcShape), c.seed);
        const got = Array.from({ length: c.nDst }, (_, i) => randomBytes(size(c.dstShape), c.seed + i + 1));
        const want = got.map((d) => d.slice());
        naive(src, c.srcShape, want, c.dstShape, c.itemSize, c.boxes);
        await copyBoxes(
          src,
          Int32Array.from(c.srcShape),
          got,
          Int32Array.from(c.dstShape),
          c.itemSize,
          Int32Array.from(c.boxes.flat()),
        );
        assert.equal(boxStride(c.rank), 1 + 3 * c.rank);
        for (const [i, g] of got.entries()) assert.deepEqual(g, want[i]);
      }),
      { numRuns: runs, seed },
    );
  });
}

test("copyBoxes: a box leaving its source or destination is a SchemaError, and nothing is copied", async () => {
  const src = new Uint8Array(4 * 4).fill(1);
  const dst = new Uint8Array(2 * 2);
  const shape4 = Int32Array.of(4, 4);
  const shape2 = Int32Array.of(2, 2);
  const call = (boxes: number[], dsts = [dst]) =>
    copyBoxes(src, shape4, dsts, shape2, 1, Int32Array.from(boxes));
  // A good box first, so a copy made before the check would show in dst.
  await assert.rejects(call([0, 0, 0, 0, 0, 2, 2, 0, 3, 0, 0, 0, 2, 2]), (e: unknown) => {
    assert.ok(e instanceof SchemaError);
    assert.equal(e.pointer, "/boxes/7");
    return true;
  });
  await assert.rejects(call([0, 0, 0, 1, 1, 2, 2]), SchemaError); // dst start 1 + 2 > 2
  await assert.rejects(call([1, 0, 0, 0, 0, 1, 1]), SchemaError); // dst 1 of 1
  await assert.rejects(call([0, 0, 0, 0, 0, 1, 1], [new Uint8Array(3)]), SchemaError); // dst too short
  assert.ok(dst.every((b) => b === 0));
});

/**
 * The boxes whose destinations overlap no earlier kept box's, as a shard's chunks each have their own
 * place in the target; decodeBoxes leaves which of two overlapping boxes lands unspecified. A box is
 * [dst, ...srcStart, ...dstStart, ...count]; one with a zero count writes nothing.
 */
function disjointDestinations(boxes: number[][], rank: number): number[][] {
  const overlap = (a: number[], b: number[]) => {
    for (let d = 0; d < rank; d++) {
      const [a0, an] = [a[1 + rank + d]!, a[1 + 2 * rank + d]!];
      const [b0, bn] = [b[1 + rank + d]!, b[1 + 2 * rank + d]!];
      if (an === 0 || bn === 0 || a0 + an <= b0 || b0 + bn <= a0) return false;
    }
    return true;
  };
  const kept: number[][] = [];
  for (const b of boxes) if (!kept.some((k) => overlap(k, b))) kept.push(b);
  return kept;
}

for (const backend of BACKENDS) {
  test(`decodeBoxes [${backend}]: equals decode() then an element-by-element copy of each chunk's box`, async () => {
    setCodecBackend(backend);
    await fc.assert(
      fc.asyncProperty(boxCase, fc.constantFrom(...PROFILES), async (c, profile) => {
        const spec = profileCodec(
          profile,
          c.itemSize === 8 ? "float64" : c.itemSize === 4 ? "int32" : "uint8",
        );
        if (c.itemSize === 2) return; // no 2-byte dtype in the profiles
        const boxes = disjointDestinations(c.boxes, c.rank);
        const size = (shape: number[]) => shape.reduce((p, n) => p * n, 1) * c.itemSize;
        // Every box becomes one frame: its own chunk (the "src" shape) with its own content.
        const chunks = boxes.map((_, i) => randomBytes(size(c.srcShape), c.seed + 7 * i));
        const frames = await Promise.all(chunks.map((ch) => encode(spec, ch)));
        const got = randomBytes(size(c.dstShape), c.seed + 99);
        const want = got.slice();
        for (const [i, b] of boxes.entries())
          naive(chunks[i]!, c.srcShape, [want], c.dstShape, c.itemSize, [[0, ...b.slice(1)]]);
        await decodeBoxes(
          spec,
          frames,
          Int32Array.from(c.srcShape),
          c.itemSize,
          got,
          Int32Array.from(c.dstShape),
          Int32Array.from(boxes.flatMap((b) => b.slice(1))),
        );
        assert.deepEqual(got, want);
      }),
      { numRuns: Math.ceil(runs / 2), seed },
    );
  });

  test(`decodeBoxes [${backend}]: a damaged frame is CorruptShard naming the key and its chunk id`, async () => {
    setCodecBackend(backend);
    const spec = profileCodec("diagnostic", "float64");
    const chunk = randomBytes(8 * 64, 5);
    const good = await encode(spec, chunk);
    const bad = good.slice(0, good.length - 3);
    const target = new Uint8Array(8 * 64 * 2);
    const boxes = Int32Array.of(0, 0, 64, 0, 64, 64);
    await assert.rejects(
      decodeBoxes(
        spec,
        [good, bad],
        Int32Array.of(64),
        8,
        target,
        Int32Array.of(128),
        boxes,
        "v/c/0",
        [3, 9],
      ),
      (e: unknown) => {
        assert.ok(e instanceof CorruptShard);
        assert.equal(e.key, "v/c/0");
        assert.match(e.message, /^inner chunk 9: /);
        return true;
      },
    );
  });
}
