import type { TypedArray } from "@zarr-stream/spec";
import type { ArrayToArrayCodec, ChunkSpec, CodecContext, CodecFactory } from "../codec-model.js";
import { allocTyped } from "../dtype.js";
import { product } from "../grid.js";
import { badConfig, onlyKeys } from "./config.js";

function parseOrder(order: unknown, rank: number, ctx: CodecContext): number[] {
  // zarr-python 2-era metadata spells the two trivial orders as letters.
  if (order === "C") return Array.from({ length: rank }, (_, i) => i);
  if (order === "F") return Array.from({ length: rank }, (_, i) => rank - 1 - i);
  const ok =
    Array.isArray(order) &&
    order.length === rank &&
    order.every((d) => Number.isInteger(d) && d >= 0 && d < rank) &&
    new Set(order).size === rank;
  if (!ok) badConfig(ctx, "order", `must be a permutation of 0..${rank - 1}, got ${JSON.stringify(order)}`);
  return [...(order as number[])];
}

/** An integer view of the same bytes, so float payloads (NaN bits, -0) are copied exactly. */
function words(a: TypedArray): { view: Uint8Array | Uint16Array | Uint32Array; per: number } {
  const size = a.BYTES_PER_ELEMENT;
  if (size === 1) return { view: new Uint8Array(a.buffer, a.byteOffset, a.length), per: 1 };
  if (size === 2) return { view: new Uint16Array(a.buffer, a.byteOffset, a.length), per: 1 };
  return { view: new Uint32Array(a.buffer, a.byteOffset, (a.length * size) / 4), per: size / 4 };
}

/**
 * The array whose axis i is axis perm[i] of `src` (numpy's `src.transpose(perm)`, made C-contiguous).
 * Walks the result in C order and the source by its permuted strides.
 */
export function transposed(
  src: TypedArray,
  shape: readonly number[],
  perm: readonly number[],
  dtype: ChunkSpec["dtype"],
): TypedArray {
  const rank = shape.length;
  const out = allocTyped(dtype, product(shape));
  if (out.length === 0) return out;
  const strides = new Array<number>(rank);
  for (let d = rank - 1, s = 1; d >= 0; d--) {
    strides[d] = s;
    s *= shape[d]!;
  }
  const outShape = perm.map((p) => shape[p]!);
  const step = perm.map((p) => strides[p]!);
  const { view: from, per } = words(src);
  const { view: to } = words(out);
  const idx = new Array<number>(rank).fill(0);
  let at = 0;
  for (let k = 0; k < out.length; k++) {
    for (let w = 0; w < per; w++) to[k * per + w] = from[at * per + w]!;
    let d = rank - 1;
    while (d >= 0) {
      idx[d]!++;
      at += step[d]!;
      if (idx[d]! < outShape[d]!) break;
      at -= step[d]! * outShape[d]!;
      idx[d] = 0;
      d--;
    }
  }
  return out;
}

/** Zarr v3 `transpose`: the chunk is stored with its axes in `order`. */
export const transposeCodec: CodecFactory = (cfg, ctx): ArrayToArrayCodec => {
  onlyKeys(cfg, ["order"], ctx);
  const order = parseOrder(cfg.order, ctx.spec.shape.length, ctx);
  const inverse = order.map((_, i) => order.indexOf(i));
  return {
    kind: "array_to_array",
    name: "transpose",
    encodedSpec: (spec) => ({ ...spec, shape: order.map((d) => spec.shape[d]!) }),
    encode: (data, spec) => transposed(data, spec.shape, order, spec.dtype),
    decode: (data, spec) =>
      transposed(
        data,
        order.map((d) => spec.shape[d]!),
        inverse,
        spec.dtype,
      ),
  };
};
