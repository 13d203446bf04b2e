import { CorruptShard, SchemaError, type TypedArray } from "@zarr-stream/spec";
import type { PinnedObject, ReadableStore } from "@zarr-stream/store";
import { isShardingCodec, type ShardingCodec } from "./codecs/sharding-codec.js";
import { fillBox } from "./fill-value.js";
import { forEachIndex, linearIndex } from "./grid.js";
import { readPinned } from "./pinned-read.js";
import type { ReadTarget } from "./ranged-read.js";
import { settleAll } from "./settle.js";
import { copyStrided } from "./strided.js";
import type { ZarrArray } from "./zarr-array.js";

/** The part of a decoded block (origin `origin`, shape `shape`, array coordinates) inside `sel`. */
function overlap(
  origin: readonly number[],
  shape: readonly number[],
  sel: [number, number][],
  target: ReadTarget,
) {
  const src: number[] = [];
  const dst: number[] = [];
  const count: number[] = [];
  origin.forEach((o, d) => {
    const a = Math.max(o, sel[d]![0]);
    const b = Math.min(o + shape[d]!, sel[d]![1]);
    src.push(a - o);
    dst.push(target.start[d]! + a - sel[d]![0]);
    count.push(Math.max(0, b - a));
  });
  return { src, dst, count };
}

function place(
  block: TypedArray,
  origin: number[],
  shape: number[],
  sel: [number, number][],
  target: ReadTarget,
) {
  const { src, dst, count } = overlap(origin, shape, sel, target);
  copyStrided(block, shape, src, target.data, target.shape, dst, count);
}

function fillPart(
  array: ZarrArray,
  origin: number[],
  shape: number[],
  sel: [number, number][],
  target: ReadTarget,
) {
  if (target.zeroed && (array.fill === 0 || array.fill === 0n)) return;
  const { dst, count } = overlap(origin, shape, sel, target);
  fillBox(target.data, target.shape, dst, count, array.fill);
}

/**
 * Reads the box `sel` (array coordinates, inside chunk `chunkIndex`) of the chunk object `key` into
 * `target`, through the array's codec pipeline: any Zarr v3 array whose codecs we have. A chunk that is
 * only sharded (sharding_indexed with no codec around it) is read partially: its index, then only the
 * inner chunks the box touches, its index and bodies from one version when the store can pin one (as
 * readShardInto does); anything else is read whole and decoded. Returns false, writing nothing,
 * when the object is absent. Arrays with a `layout` read faster through readShardInto.
 */
export async function readChunkInto(
  store: ReadableStore,
  key: string,
  array: ZarrArray,
  chunkIndex: readonly number[],
  sel: [number, number][],
  target: ReadTarget,
): Promise<boolean> {
  if (sel.length !== array.shape.length || chunkIndex.length !== array.shape.length)
    throw new SchemaError(
      `readChunkInto: sel and chunkIndex must have rank ${array.shape.length}`,
      "/sel",
      "readChunkInto",
    );
  const origin = chunkIndex.map((c, d) => c * array.chunkShape[d]!);
  const { pipeline } = array;
  const serialiser = pipeline.arrayToBytes;
  if (pipeline.arrayToArray.length === 0 && pipeline.bytesToBytes.length === 0 && isShardingCodec(serialiser))
    return readPinned(store, key, (object, attempt) =>
      // A retry may find inner chunks absent that the attempt before wrote: they must be filled.
      readShardedChunkInto(
        object,
        array,
        serialiser,
        origin,
        sel,
        attempt === 1 ? target : { ...target, zeroed: false },
      ),
    );
  const bytes = await store.get(key);
  if (bytes === undefined) return false;
  place(await pipeline.decode(bytes, key), origin, array.chunkShape, sel, target);
  return true;
}

async function readShardedChunkInto(
  object: PinnedObject,
  array: ZarrArray,
  codec: ShardingCodec,
  origin: number[],
  sel: [number, number][],
  target: ReadTarget,
): Promise<boolean> {
  const { key } = object;
  const n = codec.indexLength;
  const indexBytes =
    codec.indexLocation === "start" ? await object.getRange(0, n) : await object.getSuffix(n);
  if (indexBytes === undefined) return false;
  if (indexBytes.byteLength < n)
    throw new CorruptShard(
      `shard ${JSON.stringify(key)}: ${indexBytes.byteLength} bytes, shorter than its index`,
      key,
    );
  const index = await codec.decodeIndex(indexBytes, undefined, key);
  const { chunkShape, grid } = codec;
  const inner = [...chunkShape];
  const lo = sel.map(([a], d) => Math.floor((a - origin[d]!) / chunkShape[d]!));
  const hi = sel.map(([, b], d) => Math.ceil((b - origin[d]!) / chunkShape[d]!));
  const reads: Promise<void>[] = [];
  forEachIndex(lo, hi, (idx) => {
    const i = linearIndex(idx, grid);
    const at = idx.map((k, d) => origin[d]! + k * chunkShape[d]!);
    const offset = index.offsets[i]!;
    if (offset < 0) return fillPart(array, at, inner, sel, target);
    const length = index.nbytes[i]!;
    reads.push(
      (async () => {
        const body = await object.getRange(offset, length);
        if (body === undefined || body.byteLength < length)
          throw new CorruptShard(
            `shard ${JSON.stringify(key)}: inner chunk ${i} reaches past the object's end`,
            key,
          );
        place(await codec.inner.decode(body, key), at, inner, sel, target);
      })(),
    );
  });
  await settleAll(reads);
  return true;
}

/** Sets the part of `sel` inside chunk `chunkIndex` to the array's fill value (an absent chunk object). */
export function fillChunkPart(
  array: ZarrArray,
  chunkIndex: readonly number[],
  sel: [number, number][],
  target: ReadTarget,
): void {
  const origin = chunkIndex.map((c, d) => c * array.chunkShape[d]!);
  fillPart(array, origin, array.chunkShape, sel, target);
}
