import { type DType, SchemaError, type TypedArray } from "@zarr-stream/spec";
import { filledTyped } from "./dtype.js";
import { product } from "./grid.js";
import { copyStrided } from "./strided.js";

const INT_RANGE: Partial<Record<DType, [number, number]>> = {
  int32: [-(2 ** 31), 2 ** 31 - 1],
  uint8: [0, 255],
  uint32: [0, 2 ** 32 - 1],
};
const BIG_RANGE: Partial<Record<DType, [bigint, bigint]>> = {
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
};
const FLOAT_WORDS: Partial<Record<DType, number>> = { float32: 4, float64: 8 };

/**
 * A zarr.json fill_value as an element of `dtype` (Zarr v3 core: a number, for floats also "NaN",
 * "Infinity", "-Infinity" or the hex bit pattern "0x..."). SchemaError at /fill_value otherwise.
 */
export function parseFillValue(value: unknown, dtype: DType, document: string): number | bigint {
  const bad = (reason: string): never => {
    throw new SchemaError(`${document}: /fill_value: ${reason}`, "/fill_value", document);
  };
  const words = FLOAT_WORDS[dtype];
  if (words !== undefined) {
    if (typeof value === "number") return value;
    if (value === "NaN") return Number.NaN;
    if (value === "Infinity") return Number.POSITIVE_INFINITY;
    if (value === "-Infinity") return Number.NEGATIVE_INFINITY;
    if (typeof value === "string" && new RegExp(`^0x[0-9a-fA-F]{${2 * words}}$`).test(value)) {
      const view = new DataView(new ArrayBuffer(8));
      const bits = BigInt(value);
      if (words === 4) {
        view.setUint32(0, Number(bits));
        return view.getFloat32(0);
      }
      view.setBigUint64(0, bits);
      return view.getFloat64(0);
    }
    return bad(`${JSON.stringify(value)} is not a ${dtype} fill value`);
  }
  const big = BIG_RANGE[dtype];
  if (big !== undefined) {
    if (typeof value !== "number" || !Number.isInteger(value))
      return bad(`${JSON.stringify(value)} is not an integer`);
    const v = BigInt(value);
    if (v < big[0] || v > big[1]) bad(`${value} is outside ${dtype}`);
    return v;
  }
  const [lo, hi] = INT_RANGE[dtype] ?? bad(`no fill value rule for ${dtype}`);
  if (typeof value !== "number" || !Number.isInteger(value) || value < lo || value > hi)
    bad(`${JSON.stringify(value)} is not a ${dtype} integer`);
  return value as number;
}

/** True when every element of `data` is `fill`, compared as Object.is does (NaN is NaN, -0 is not 0). */
export function isAllFill(data: TypedArray, fill: number | bigint): boolean {
  const n = data.length;
  if (typeof fill === "bigint") {
    for (let i = 0; i < n; i++) if (data[i] !== fill) return false;
    return true;
  }
  for (let i = 0; i < n; i++) if (!Object.is(data[i], fill)) return false;
  return true;
}

/** Sets the box of `out` (C order, shape `outShape`) at `start` of extent `count` to `fill`. */
export function fillBox(
  out: TypedArray,
  outShape: readonly number[],
  start: readonly number[],
  count: readonly number[],
  fill: number | bigint,
): void {
  const n = product(count);
  if (n === 0) return;
  const src = filledTyped(dtypeOf(out), n, fill);
  copyStrided(
    src,
    [...count],
    count.map(() => 0),
    out,
    [...outShape],
    [...start],
    [...count],
  );
}

function dtypeOf(a: TypedArray): DType {
  const names: [DType, unknown][] = [
    ["float64", Float64Array],
    ["float32", Float32Array],
    ["int32", Int32Array],
    ["int64", BigInt64Array],
    ["uint8", Uint8Array],
    ["uint32", Uint32Array],
    ["uint64", BigUint64Array],
  ];
  const hit = names.find(([, C]) => a.constructor === C);
  if (hit === undefined)
    throw new SchemaError(`fillBox: unsupported array ${a.constructor.name}`, "/out", "fillBox");
  return hit[0];
}
