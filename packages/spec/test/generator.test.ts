import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { fillGenerated, generatorValue, type StreamDType } from "../src/index.js";

test("§10 generator values worked by hand", () => {
  // seed 100, record 2, indices (0, 3): 100 + 26 + 1*3 + 4*5 = 149
  assert.equal(generatorValue(100, 2, [0, 3], "float64"), 149.25);
  assert.equal(generatorValue(100, 2, [0, 3], "int32"), 149);
  assert.equal(generatorValue(100, 2, [0, 3], "int64"), 149n);
  assert.equal(generatorValue(1000, 0, [1, 1, 1, 1, 1], "uint8"), (1000 + 2 * (3 + 5 + 11 + 17 + 23)) % 251);
  assert.equal(generatorValue(7, 0, [], "float32"), 7.25); // a 0-d static
  assert.equal(generatorValue(-300, 0, [0], "uint8"), 205); // Python's -297 % 251
  assert.throws(() => generatorValue(0, 0, [0, 0, 0, 0, 0, 0], "int32"));
});

test("§10 fillGenerated is row-major over global indices and matches the scalar formula", () => {
  const out = fillGenerated("int32", 5, 1, ["lat", "lon"], { lat: [2, 4], lon: [4, 7] });
  assert.deepEqual(
    [...out],
    [
      [2, 4],
      [2, 5],
      [2, 6],
      [3, 4],
      [3, 5],
      [3, 6],
    ].map(([i, j]) => 5 + 13 + (i! + 1) * 3 + (j! + 1) * 5),
  );
  const dtypes: StreamDType[] = ["float64", "float32", "int32", "int64", "uint8"];
  fc.assert(
    fc.property(
      fc.constantFrom(...dtypes),
      fc.integer({ min: -1000, max: 1000 }),
      fc.nat(50),
      fc.array(fc.tuple(fc.nat(6), fc.nat(4)), { maxLength: 5 }),
      (dtype, seed, r, spans) => {
        const dims = spans.map((_, k) => `d${k}`);
        const region = Object.fromEntries(
          spans.map(([s, n], k) => [`d${k}`, [s, s + n] as [number, number]]),
        );
        const got = fillGenerated(dtype, seed, r, dims, region);
        const shape = spans.map(([, n]) => n);
        assert.equal(
          got.length,
          shape.reduce((a, b) => a * b, 1),
        );
        for (let flat = 0; flat < got.length; flat++) {
          let rest = flat;
          const idx = new Array<number>(dims.length);
          for (let k = dims.length - 1; k >= 0; k--) {
            idx[k] = spans[k]![0] + (rest % shape[k]!);
            rest = Math.floor(rest / shape[k]!);
          }
          const want = generatorValue(seed, r, idx, dtype);
          assert.equal(got[flat], dtype === "float32" ? Math.fround(want as number) : want);
        }
      },
    ),
    { numRuns: 300 },
  );
});

test("§10 fillGenerated writes into a given array and refuses a wrong one", () => {
  const out = new Float64Array(4);
  assert.equal(fillGenerated("float64", 0, 0, ["x"], { x: [0, 4] }, out), out);
  assert.deepEqual([...out], [3.25, 6.25, 9.25, 12.25]);
  assert.throws(() => fillGenerated("float64", 0, 0, ["x"], { x: [0, 4] }, new Float64Array(3)));
  assert.throws(() => fillGenerated("float32", 0, 0, ["x"], { x: [0, 4] }, new Float64Array(4)));
  assert.throws(() => fillGenerated("float32", 0, 0, ["x"], {}));
});

test("§10 fillGenerated fills a 1M-value region, every sampled value by the formula", () => {
  // Record 1, variable 3, region 16×256×256: value = r + 13·v + 3·(a+1) + 5·(b+1) + 11·(c+1) + 0.25.
  const out = fillGenerated("float64", 1, 3, ["a", "b", "c"], { a: [0, 16], b: [0, 256], c: [0, 256] });
  assert.equal(out.length, 16 * 256 * 256);
  for (let i = 0; i < out.length; i += 4099) {
    const [a, b, c] = [Math.floor(i / 65536), Math.floor(i / 256) % 256, i % 256];
    assert.equal(out[i], 1 + 13 * 3 + 3 * (a + 1) + 5 * (b + 1) + 11 * (c + 1) + 0.25, `index ${i}`);
  }
  assert.equal(out[out.length - 1], 1 + 39 + 16 * 3 + 256 * 5 + 256 * 11 + 0.25);
});
