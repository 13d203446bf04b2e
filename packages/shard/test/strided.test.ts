import assert from "node:assert/strict";
import { test } from "node:test";
import type { DType } from "@zarr-stream/spec";
import { SchemaError } from "@zarr-stream/spec";
import fc from "fast-check";
import { allocTyped, copyStrided } from "../src/index.js";
import { ALL_DTYPES, bytesOf, naiveCopy, product, randomBytes } from "./helpers.js";

/** A random box inside random src and dst shapes of one rank. */
const boxCase = fc.integer({ min: 0, max: 4 }).chain((rank) =>
  fc.record({
    dtype: fc.constantFrom(...ALL_DTYPES),
    seed: fc.integer({ min: 1, max: 2 ** 31 }),
    dims: fc.array(
      fc
        .record({ count: fc.integer({ min: 0, max: 5 }), srcPad: fc.nat(3), dstPad: fc.nat(3) })
        .chain(({ count, srcPad, dstPad }) =>
          fc.record({
            count: fc.constant(count),
            srcShape: fc.constant(count + srcPad),
            dstShape: fc.constant(count + dstPad),
            srcStart: fc.integer({ min: 0, max: srcPad }),
            dstStart: fc.integer({ min: 0, max: dstPad }),
          }),
        ),
      { minLength: rank, maxLength: rank },
    ),
  }),
);

test("copyStrided equals the element-by-element reference, bitwise, for random boxes of rank 0-4", () => {
  fc.assert(
    fc.property(boxCase, ({ dtype, seed, dims }) => {
      const srcShape = dims.map((d) => d.srcShape);
      const dstShape = dims.map((d) => d.dstShape);
      const srcStart = dims.map((d) => d.srcStart);
      const dstStart = dims.map((d) => d.dstStart);
      const count = dims.map((d) => d.count);
      const src = allocTyped(dtype as DType, product(srcShape));
      bytesOf(src).set(randomBytes(src.byteLength, seed));
      const got = allocTyped(dtype as DType, product(dstShape));
      bytesOf(got).set(randomBytes(got.byteLength, seed ^ 0x5555));
      const want = got.slice();
      copyStrided(src, srcShape, srcStart, got, dstShape, dstStart, count);
      naiveCopy(src, srcShape, srcStart, want, dstShape, dstStart, count);
      assert.deepEqual(bytesOf(got), bytesOf(want));
    }),
    { numRuns: 400 },
  );
});

test("copyStrided merges whole trailing dims and copies long runs (large rank-3 box)", () => {
  const shape = [6, 40, 50];
  const src = allocTyped("float32", product(shape));
  bytesOf(src).set(randomBytes(src.byteLength, 7));
  const dst = allocTyped("float32", product([3, 40, 50]));
  const want = dst.slice();
  copyStrided(src, shape, [2, 0, 0], dst, [3, 40, 50], [0, 0, 0], [3, 40, 50]);
  naiveCopy(src, shape, [2, 0, 0], want, [3, 40, 50], [0, 0, 0], [3, 40, 50]);
  assert.deepEqual(bytesOf(dst), bytesOf(want));
});

test("copyStrided keeps float32 NaN payloads bitwise (no trip through JS numbers)", () => {
  const src = new Float32Array(new Uint32Array([0x7fa00001, 0xffc00123, 0x80000000, 0x7f800001]).buffer);
  const dst = new Float32Array(8);
  copyStrided(src, [2, 2], [0, 0], dst, [2, 4], [0, 1], [2, 2]);
  assert.deepEqual(
    [...new Uint32Array(dst.buffer)],
    [0, 0x7fa00001, 0xffc00123, 0, 0, 0x80000000, 0x7f800001, 0],
  );
});

test("copyStrided refuses boxes outside either array and mismatched element types", () => {
  const a = new Float64Array(12);
  assert.throws(() => copyStrided(a, [3, 4], [2, 0], new Float64Array(12), [3, 4], [0, 0], [2, 4]), {
    name: "SchemaError",
    pointer: "/srcStart/0",
  });
  assert.throws(() => copyStrided(a, [3, 4], [0, 0], new Float64Array(12), [3, 4], [0, 1], [1, 4]), {
    name: "SchemaError",
    pointer: "/dstStart/1",
  });
  assert.throws(
    () => copyStrided(a, [3, 4], [0, 0], new Float32Array(12), [3, 4], [0, 0], [1, 1]),
    (e) => e instanceof SchemaError && /Float64Array.*Float32Array/.test(e.message),
  );
  assert.throws(() => copyStrided(a, [3, 5], [0, 0], a, [3, 4], [0, 0], [1, 1]), {
    name: "SchemaError",
    pointer: "/src",
  });
});
