import { SchemaError, type TypedArray } from "@zarr-stream/spec";
import { product } from "./grid.js";

/** Runs shorter than this are copied element by element: subarray().set() costs more than it saves. */
const SHORT_RUN = 32;

/**
 * Float elements are never copied through JS numbers (a float32 signalling NaN would come back quieted),
 * so element-wise copies go through an integer view of the same bytes.
 */
function integerView(a: TypedArray): { view: Uint32Array | Uint8Array; factor: number } {
  const size = a.BYTES_PER_ELEMENT;
  if (size === 1) return { view: new Uint8Array(a.buffer, a.byteOffset, a.length), factor: 1 };
  return { view: new Uint32Array(a.buffer, a.byteOffset, (a.length * size) / 4), factor: size / 4 };
}

function fail(message: string, pointer: string): never {
  throw new SchemaError(`copyStrided: ${message}`, pointer, "copyStrided");
}

function checkArgs(
  src: TypedArray,
  srcShape: readonly number[],
  srcStart: readonly number[],
  dst: TypedArray,
  dstShape: readonly number[],
  dstStart: readonly number[],
  count: readonly number[],
): void {
  const rank = count.length;
  for (const [name, xs] of [
    ["srcShape", srcShape],
    ["srcStart", srcStart],
    ["dstShape", dstShape],
    ["dstStart", dstStart],
  ] as const) {
    if (xs.length !== rank) fail(`${name} has rank ${xs.length}, count has rank ${rank}`, `/${name}`);
  }
  if (src.constructor !== dst.constructor) {
    fail(`src is a ${src.constructor.name}, dst a ${dst.constructor.name}`, "/dst");
  }
  if (src.length !== product(srcShape))
    fail(`src has ${src.length} elements, srcShape [${srcShape}]`, "/src");
  if (dst.length !== product(dstShape))
    fail(`dst has ${dst.length} elements, dstShape [${dstShape}]`, "/dst");
  for (let d = 0; d < rank; d++) {
    const c = count[d]!;
    const s0 = srcStart[d]!;
    const d0 = dstStart[d]!;
    if (!Number.isSafeInteger(c) || c < 0)
      fail(`count[${d}] = ${c} is not a non-negative integer`, `/count/${d}`);
    if (!Number.isSafeInteger(s0) || s0 < 0 || s0 + c > srcShape[d]!) {
      fail(`src box [${s0}, ${s0 + c}) leaves dim ${d} of length ${srcShape[d]}`, `/srcStart/${d}`);
    }
    if (!Number.isSafeInteger(d0) || d0 < 0 || d0 + c > dstShape[d]!) {
      fail(`dst box [${d0}, ${d0 + c}) leaves dim ${d} of length ${dstShape[d]}`, `/dstStart/${d}`);
    }
  }
}

function rowMajorStrides(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  let s = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    strides[d] = s;
    s *= shape[d]!;
  }
  return strides;
}

/**
 * Copies the box `count` starting at `srcStart` of the row-major `src` (shape `srcShape`) to `dstStart` of
 * `dst` (shape `dstShape`). Any rank, including 0 (one element). Trailing dims that are whole in both
 * arrays are merged so each contiguous run is copied in one set().
 */
export function copyStrided(
  src: TypedArray,
  srcShape: readonly number[],
  srcStart: readonly number[],
  dst: TypedArray,
  dstShape: readonly number[],
  dstStart: readonly number[],
  count: readonly number[],
): void {
  checkArgs(src, srcShape, srcStart, dst, dstShape, dstStart, count);
  const rank = count.length;
  if (product(count) === 0) return;
  const srcStrides = rowMajorStrides(srcShape);
  const dstStrides = rowMajorStrides(dstShape);
  let srcBase = 0;
  let dstBase = 0;
  for (let d = 0; d < rank; d++) {
    srcBase += srcStart[d]! * srcStrides[d]!;
    dstBase += dstStart[d]! * dstStrides[d]!;
  }
  // Merge whole trailing dims into the innermost run.
  let inner = Math.max(rank - 1, 0);
  let run = rank === 0 ? 1 : count[inner]!;
  while (inner > 0 && count[inner] === srcShape[inner] && count[inner] === dstShape[inner]) {
    inner--;
    run *= count[inner]!;
  }
  const outer = inner; // dims [0, outer) are iterated, dim `inner` (merged with the rest) is the run
  const s = integerView(src);
  const t = integerView(dst);
  const f = s.factor;
  const runUnits = run * f;
  let srcOff = srcBase * f;
  let dstOff = dstBase * f;
  const idx = new Array<number>(outer).fill(0);
  for (;;) {
    if (runUnits < SHORT_RUN) {
      for (let i = 0; i < runUnits; i++) t.view[dstOff + i] = s.view[srcOff + i]!;
    } else {
      t.view.set(s.view.subarray(srcOff, srcOff + runUnits), dstOff);
    }
    // Odometer over the outer dims, last fastest.
    let d = outer - 1;
    while (d >= 0) {
      idx[d]!++;
      srcOff += srcStrides[d]! * f;
      dstOff += dstStrides[d]! * f;
      if (idx[d]! < count[d]!) break;
      srcOff -= idx[d]! * srcStrides[d]! * f;
      dstOff -= idx[d]! * dstStrides[d]! * f;
      idx[d] = 0;
      d--;
    }
    if (d < 0) return;
  }
}
