import { CorruptShard, type TypedArray } from "@zarr-stream/spec";
import type { ArrayToBytesCodec, ChunkSpec, CodecFactory } from "../codec-model.js";
import { bytesOf, itemSize, typedFromBytes } from "../dtype.js";
import { product } from "../grid.js";
import { oneOf, onlyKeys } from "./config.js";

/** Reverses the bytes of each `size`-byte element into a fresh buffer. */
function swapped(bytes: Uint8Array, size: number): Uint8Array {
  const out = new Uint8Array(bytes.byteLength);
  for (let i = 0; i < bytes.byteLength; i += size) {
    for (let k = 0; k < size; k++) out[i + k] = bytes[i + size - 1 - k]!;
  }
  return out;
}

/** Zarr v3 `bytes`: the elements in C order, little- or big-endian. */
export const bytesCodec: CodecFactory = (cfg, ctx): ArrayToBytesCodec => {
  onlyKeys(cfg, ["endian"], ctx);
  const endian = oneOf(cfg, "endian", ["little", "big"] as const, ctx, "little");
  const swap = endian === "big" && itemSize(ctx.spec.dtype) > 1;
  return {
    kind: "array_to_bytes",
    name: "bytes",
    encodedLength: (spec: ChunkSpec) => product(spec.shape) * itemSize(spec.dtype),
    encode: async (data: TypedArray) => {
      const raw = bytesOf(data);
      return swap ? swapped(raw, data.BYTES_PER_ELEMENT) : raw;
    },
    decode: async (bytes: Uint8Array, spec: ChunkSpec, key: string) => {
      const size = itemSize(spec.dtype);
      const want = product(spec.shape) * size;
      if (bytes.byteLength !== want) {
        throw new CorruptShard(
          `chunk ${JSON.stringify(key)}: ${bytes.byteLength} bytes, a [${spec.shape}] ${spec.dtype} chunk is ${want}`,
          key,
        );
      }
      return typedFromBytes(spec.dtype, swap ? swapped(bytes, size) : bytes);
    },
  };
};
