import { CorruptShard, type TypedArray } from "@zarr-stream/spec";
import type { ArrayToBytesCodec, ChunkPipeline, ChunkSpec, CodecFactory } from "../codec-model.js";
import { allocTyped } from "../dtype.js";
import { fillBox, isAllFill } from "../fill-value.js";
import { forEachIndex, linearIndex, product } from "../grid.js";
import { copyStrided } from "../strided.js";
import { badConfig, oneOf, onlyKeys } from "./config.js";

/** The index's all-ones entry: the inner chunk is absent (fill). */
const MISSING = 0xffff_ffff_ffff_ffffn;

const DEFAULT_INDEX_CODECS = [{ name: "bytes", configuration: { endian: "little" } }, { name: "crc32c" }];

/** Per inner chunk (C order over the shard's chunk grid): offset and length, -1 when absent. */
export interface InnerChunkIndex {
  offsets: Float64Array;
  nbytes: Float64Array;
}

/** sharding_indexed as an array→bytes codec: what partial reads need to know of it besides encode/decode. */
export interface ShardingCodec extends ArrayToBytesCodec {
  readonly name: "sharding_indexed";
  readonly chunkShape: readonly number[];
  /** Inner chunks per shard along each dim. */
  readonly grid: readonly number[];
  readonly inner: ChunkPipeline;
  readonly indexLocation: "start" | "end";
  /** Bytes of the encoded index (fixed: the index codecs must not depend on the data). */
  readonly indexLength: number;
  /** Decodes and checks the index; entries must lie in the data area when `objectSize` is known. */
  decodeIndex(indexBytes: Uint8Array, objectSize: number | undefined, key: string): Promise<InnerChunkIndex>;
}

export function isShardingCodec(codec: ArrayToBytesCodec): codec is ShardingCodec {
  return codec.name === "sharding_indexed" && "inner" in codec;
}

/** Zarr v3 `sharding_indexed`: inner chunks each through their own pipeline, located by an index. */
export const shardingCodec: CodecFactory = (cfg, ctx): ShardingCodec => {
  onlyKeys(cfg, ["chunk_shape", "codecs", "index_codecs", "index_location"], ctx);
  const shard = ctx.spec.shape;
  const chunkShape = cfg.chunk_shape;
  if (
    !Array.isArray(chunkShape) ||
    chunkShape.length !== shard.length ||
    !chunkShape.every((c) => Number.isSafeInteger(c) && c >= 1)
  ) {
    badConfig(ctx, "chunk_shape", `must be ${shard.length} integers >= 1, got ${JSON.stringify(chunkShape)}`);
  }
  chunkShape.forEach((c: number, d) => {
    if (shard[d]! % c !== 0)
      badConfig(ctx, `chunk_shape/${d}`, `inner chunk ${c} does not divide shard ${shard[d]}`);
  });
  const grid = shard.map((s, d) => s / (chunkShape[d] as number));
  const at = `${ctx.pointer}/configuration`;
  const inner = ctx.pipeline(cfg.codecs, { ...ctx.spec, shape: [...chunkShape] }, `${at}/codecs`);
  const indexSpec: ChunkSpec = { shape: [...grid, 2], dtype: "uint64", fill: MISSING };
  const index = ctx.pipeline(cfg.index_codecs ?? DEFAULT_INDEX_CODECS, indexSpec, `${at}/index_codecs`);
  const indexLength = index.encodedLength();
  if (indexLength === undefined)
    badConfig(ctx, "index_codecs", "must encode to a fixed size (no compressors)");
  const indexLocation = oneOf(cfg, "index_location", ["start", "end"] as const, ctx, "end");
  const n = product(grid);

  const decodeIndex = async (bytes: Uint8Array, objectSize: number | undefined, key: string) => {
    const entries = (await index.decode(bytes, key)) as BigUint64Array;
    const lo = BigInt(indexLocation === "start" ? indexLength : 0);
    const hi =
      objectSize === undefined ? undefined : BigInt(objectSize - (indexLocation === "end" ? indexLength : 0));
    const offsets = new Float64Array(n);
    const nbytes = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const o = entries[2 * i]!;
      const len = entries[2 * i + 1]!;
      if (o === MISSING && len === MISSING) {
        offsets[i] = -1;
        nbytes[i] = -1;
        continue;
      }
      if (o < lo || (hi !== undefined && o + len > hi) || o + len > BigInt(Number.MAX_SAFE_INTEGER)) {
        throw new CorruptShard(
          `shard ${JSON.stringify(key)}: index entry ${i} [${o}, ${o + len}) lies outside the data area`,
          key,
        );
      }
      offsets[i] = Number(o);
      nbytes[i] = Number(len);
    }
    return { offsets, nbytes };
  };

  const encode = async (data: TypedArray, spec: ChunkSpec) => {
    const chunks: (TypedArray | undefined)[] = [];
    const zeros = chunkShape.map(() => 0);
    const chunkLength = product(chunkShape);
    forEachIndex(zeros, grid, (idx) => {
      const chunk = allocTyped(spec.dtype, chunkLength);
      const origin = idx.map((k, d) => k * chunkShape[d]!);
      copyStrided(data, spec.shape, origin, chunk, chunkShape, zeros, chunkShape);
      chunks.push(isAllFill(chunk, spec.fill) ? undefined : chunk);
    });
    const encoded = await Promise.all(chunks.map((c) => (c === undefined ? undefined : inner.encode(c))));
    const entries = new BigUint64Array(2 * n).fill(MISSING);
    let pos = indexLocation === "start" ? indexLength : 0;
    encoded.forEach((body, i) => {
      if (body === undefined) return;
      entries[2 * i] = BigInt(pos);
      entries[2 * i + 1] = BigInt(body.byteLength);
      pos += body.byteLength;
    });
    const indexBytes = await index.encode(entries);
    const out = new Uint8Array(pos + (indexLocation === "end" ? indexLength : 0));
    let at = indexLocation === "start" ? indexLength : 0;
    for (const body of encoded) {
      if (body === undefined) continue;
      out.set(body, at);
      at += body.byteLength;
    }
    out.set(indexBytes, indexLocation === "start" ? 0 : pos);
    return out;
  };

  const decode = async (bytes: Uint8Array, spec: ChunkSpec, key: string) => {
    if (bytes.byteLength < indexLength)
      throw new CorruptShard(
        `shard ${JSON.stringify(key)}: ${bytes.byteLength} bytes, shorter than its index`,
        key,
      );
    const indexBytes =
      indexLocation === "start"
        ? bytes.subarray(0, indexLength)
        : bytes.subarray(bytes.byteLength - indexLength);
    const { offsets, nbytes } = await decodeIndex(indexBytes, bytes.byteLength, key);
    const out = allocTyped(spec.dtype, product(spec.shape));
    const zeros = chunkShape.map(() => 0);
    const jobs: Promise<void>[] = [];
    forEachIndex(zeros, grid, (idx) => {
      const i = linearIndex(idx, grid);
      const origin = idx.map((k, d) => k * chunkShape[d]!);
      if (offsets[i]! < 0) {
        fillBox(out, spec.shape, origin, chunkShape, spec.fill);
        return;
      }
      const body = bytes.subarray(offsets[i]!, offsets[i]! + nbytes[i]!);
      jobs.push(
        inner.decode(body, key).then((chunk) => {
          copyStrided(chunk, chunkShape, zeros, out, spec.shape, origin, chunkShape);
        }),
      );
    });
    await Promise.all(jobs);
    return out;
  };

  return {
    kind: "array_to_bytes",
    name: "sharding_indexed",
    chunkShape: [...chunkShape],
    grid,
    inner,
    indexLocation,
    indexLength,
    decodeIndex,
    encodedLength: () => undefined,
    encode,
    decode,
  };
};
