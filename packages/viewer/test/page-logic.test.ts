import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SchemaError } from "@zarr-stream/spec";
import fc from "fast-check";
import { colorAt, finiteRange, fraction, MISSING_RGB, niceTicks, paintGrid } from "../src/page/colormap.js";
import { formatTime, formatValue, unitsOf } from "../src/page/format.js";
import {
  cellAt,
  cellCentre,
  isIncreasing,
  planeOf,
  sliceGrid,
  sliceSelection,
  toNumbers,
} from "../src/page/slice.js";

describe("colour map", () => {
  it("viridis ends: dark purple at the minimum, yellow at the maximum, clamped outside", () => {
    assert.deepEqual(colorAt(0), [68, 1, 84]);
    assert.deepEqual(colorAt(1), [253, 231, 37]);
    assert.deepEqual(colorAt(-3), colorAt(0));
    assert.deepEqual(colorAt(7), colorAt(1));
    assert.deepEqual(colorAt(Number.NaN), [...MISSING_RGB]);
  });

  it("colour is continuous: nearby fractions give nearby colours", () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 0.999, noNaN: true }), (f) => {
        const a = colorAt(f);
        const b = colorAt(f + 0.001);
        return a.every((x, k) => Math.abs(x - b[k]!) <= 2);
      }),
    );
  });

  it("lightness rises with the value (a reader can order colours)", () => {
    const luma = ([r, g, b]: number[]) => 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
    for (let i = 0; i < 100; i++) assert.ok(luma(colorAt((i + 1) / 100)) > luma(colorAt(i / 100)) - 0.5);
  });

  it("fraction maps [min, max] to [0, 1]; a flat field is the middle colour; NaN stays NaN", () => {
    assert.equal(fraction(5, 0, 10), 0.5);
    assert.equal(fraction(0, 0, 10), 0);
    assert.equal(fraction(10, 0, 10), 1);
    assert.equal(fraction(3, 3, 3), 0.5);
    assert.ok(Number.isNaN(fraction(Number.NaN, 0, 1)));
  });

  it("finiteRange ignores NaN and infinities; none finite is undefined", () => {
    assert.deepEqual(finiteRange([3, Number.NaN, -2, Number.POSITIVE_INFINITY, 7]), { min: -2, max: 7 });
    assert.equal(finiteRange([Number.NaN, Number.NEGATIVE_INFINITY]), undefined);
    assert.equal(finiteRange([]), undefined);
  });

  it("paintGrid: one opaque pixel per cell, min darkest, max brightest, flipY mirrors rows, NaN grey", () => {
    const data = [0, 1, 2, Number.NaN, 4, 5]; // 2 rows x 3 cols
    const px = paintGrid(data, 2, 3, 0, 5, false);
    assert.equal(px.length, 2 * 3 * 4);
    const at = (p: Uint8ClampedArray, y: number, x: number) =>
      Array.from(p.slice((y * 3 + x) * 4, (y * 3 + x) * 4 + 4));
    assert.deepEqual(at(px, 0, 0), [...colorAt(0), 255]);
    assert.deepEqual(at(px, 1, 2), [...colorAt(1), 255]);
    assert.deepEqual(at(px, 1, 0), [...MISSING_RGB, 255]);
    const flipped = paintGrid(data, 2, 3, 0, 5, true);
    assert.deepEqual(at(flipped, 1, 0), at(px, 0, 0));
    assert.deepEqual(at(flipped, 0, 2), at(px, 1, 2));
  });

  it("niceTicks: round steps (1, 2, 5 x 10^k) inside the range, about the count asked", () => {
    assert.deepEqual(niceTicks(0, 10, 5), [0, 2, 4, 6, 8, 10]);
    assert.deepEqual(niceTicks(0.1, 0.35, 5), [0.1, 0.15, 0.2, 0.25, 0.3, 0.35]);
    fc.assert(
      fc.property(
        fc.double({ min: -1e6, max: 1e6, noNaN: true }),
        fc.double({ min: 1e-3, max: 1e6, noNaN: true }),
        (min, span) => {
          const max = min + span;
          const ticks = niceTicks(min, max, 5);
          if (ticks.length < 2 || ticks.length > 12) return false;
          const step = ticks[1]! - ticks[0]!;
          const mant = step / 10 ** Math.floor(Math.log10(step) + 1e-9);
          return (
            ticks.every((t) => t >= min - step * 1e-6 && t <= max + step * 1e-6) &&
            [1, 2, 5, 10].some((m) => Math.abs(mant - m) < 1e-6)
          );
        },
      ),
    );
  });
});

describe("formatting", () => {
  it("values: integers whole, others 6 significant digits, exponent when tiny or huge", () => {
    assert.equal(formatValue(42), "42");
    assert.equal(formatValue(-7), "-7");
    assert.equal(formatValue(281.123456789), "281.123");
    assert.equal(formatValue(0.25), "0.25");
    assert.equal(formatValue(1.5e-7), "1.5e-7");
    assert.equal(formatValue(2.5e9 + 0.5), "2.5e+9");
    assert.equal(formatValue(Number.NaN), "NaN");
    assert.equal(formatValue(Number.NEGATIVE_INFINITY), "-Inf");
  });

  it("CF time units become UTC instants; other units are shown as they are", () => {
    assert.equal(formatTime(3600, "seconds since 2026-01-01 00:00:00"), "2026-01-01T01:00:00Z");
    assert.equal(formatTime(36, "hours since 2000-01-01"), "2000-01-02T12:00:00Z");
    assert.equal(formatTime(1.5, "days since 1970-01-01T00:00:00Z"), "1970-01-02T12:00:00Z");
    assert.equal(formatTime(7200, "s"), "7200 s");
    assert.equal(formatTime(7200, undefined), "7200");
    assert.equal(formatTime(5, "fortnights since 2000-01-01"), "5 fortnights since 2000-01-01");
    assert.equal(formatTime(undefined, "s"), "t unknown");
  });

  it("unitsOf takes a non-empty string units attribute only", () => {
    assert.equal(unitsOf({ units: "K" }), "K");
    assert.equal(unitsOf({ units: "" }), undefined);
    assert.equal(unitsOf({ units: 3 }), undefined);
    assert.equal(unitsOf(undefined), undefined);
  });
});

describe("slice selection", () => {
  it("the last two non-time dims are the plane, earlier ones are held fixed", () => {
    assert.deepEqual(planeOf(["time", "lat", "lon"], 0), { fixedDims: [], yDim: "lat", xDim: "lon" });
    assert.deepEqual(planeOf(["time", "lev", "lat", "lon"], 0), {
      fixedDims: ["lev"],
      yDim: "lat",
      xDim: "lon",
    });
    assert.deepEqual(planeOf(["lat", "time", "lon"], 1), { fixedDims: [], yDim: "lat", xDim: "lon" });
    assert.deepEqual(planeOf(["time", "lon"], 0), { fixedDims: [], yDim: undefined, xDim: "lon" });
    assert.deepEqual(planeOf(["time"], 0), { fixedDims: [], yDim: undefined, xDim: undefined });
  });

  it("the selection box: the record on the time axis, the fixed index, whole plane dims", () => {
    const dims = ["time", "lev", "lat", "lon"];
    const shape = [5, 3, 4, 6];
    assert.deepEqual(sliceSelection(dims, shape, 0, 2, { lev: 1 }), [
      [2, 3],
      [1, 2],
      [0, 4],
      [0, 6],
    ]);
    assert.deepEqual(sliceGrid(dims, shape, 0).ny, 4);
    assert.deepEqual(sliceGrid(dims, shape, 0).nx, 6);
    assert.deepEqual(sliceGrid(["time", "lon"], [5, 6], 0), {
      ny: 1,
      nx: 6,
      plane: { fixedDims: [], yDim: undefined, xDim: "lon" },
    });
    assert.deepEqual(sliceSelection(["lat", "lon"], [4, 6], -1, undefined, {}), [
      [0, 4],
      [0, 6],
    ]);
  });

  it("a record or fixed index outside its dim is a SchemaError naming the dim", () => {
    const dims = ["time", "lev", "lat", "lon"];
    const shape = [5, 3, 4, 6];
    assert.throws(
      () => sliceSelection(dims, shape, 0, 5, {}),
      (e: unknown) => e instanceof SchemaError && e.pointer === "/time",
    );
    assert.throws(() => sliceSelection(dims, shape, 0, undefined, {}), SchemaError);
    assert.throws(
      () => sliceSelection(dims, shape, 0, 0, { lev: 3 }),
      (e: unknown) => e instanceof SchemaError && e.pointer === "/lev",
    );
    assert.throws(() => sliceSelection(dims, shape, 0, 0, { lev: 0.5 }), SchemaError);
    assert.throws(() => sliceSelection(dims, [5, 3], 0, 0, {}), SchemaError);
  });

  it("cellAt inverts cellCentre for every cell, drawing size and orientation", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 50, max: 900 }),
        fc.integer({ min: 50, max: 900 }),
        fc.boolean(),
        fc.nat(),
        fc.nat(),
        (ny, nx, w, h, flipY, r, c) => {
          const row = r % ny;
          const col = c % nx;
          const { px, py } = cellCentre(row, col, w, h, ny, nx, flipY);
          const got = cellAt(px, py, w, h, ny, nx, flipY);
          return got?.row === row && got.col === col;
        },
      ),
    );
  });

  it("cellAt: outside the drawing is undefined; flipY puts row 0 at the bottom", () => {
    assert.equal(cellAt(-1, 5, 100, 100, 4, 4, false), undefined);
    assert.equal(cellAt(5, 100, 100, 100, 4, 4, false), undefined);
    assert.deepEqual(cellAt(1, 1, 100, 100, 4, 4, false), { row: 0, col: 0 });
    assert.deepEqual(cellAt(1, 1, 100, 100, 4, 4, true), { row: 3, col: 0 });
    assert.deepEqual(cellAt(99, 99, 100, 100, 4, 4, true), { row: 0, col: 3 });
  });

  it("isIncreasing only for strictly increasing coordinates of length >= 2", () => {
    assert.equal(isIncreasing([-55, -45, 0]), true);
    assert.equal(isIncreasing([3, 2, 1]), false);
    assert.equal(isIncreasing([1, 1]), false);
    assert.equal(isIncreasing([1]), false);
    assert.equal(isIncreasing(undefined), false);
  });

  it("toNumbers turns int64 bigints into doubles", () => {
    assert.deepEqual(Array.from(toNumbers(new BigInt64Array([-3n, 2n ** 40n]))), [-3, 2 ** 40]);
    assert.deepEqual(Array.from(toNumbers(new Float32Array([0.5, 1.25]))), [0.5, 1.25]);
  });
});
