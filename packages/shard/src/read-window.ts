import { CorruptShard } from "@zarr-stream/spec";
import type { PinnedObject, ReadableStore } from "@zarr-stream/store";
import { itemSize } from "./dtype.js";
import { product } from "./grid.js";
import { type ArrayLayout, chunksPerShard } from "./metadata.js";
import {
  parseShardIndex,
  type ReusableBuffer,
  type ShardIndex,
  shardIndexByteLength,
} from "./shard-format.js";

/**
 * The first read of a shard is a window at its index end: the index, plus every body when the object is
 * no larger, so such a shard costs one request; bodies past the window cost one more, coalesced, request.
 * (An index-at-end window of a larger object is a suffix at an unknown offset, so it serves the index only.)
 *
 * Stores whose reads cost a round trip each (readCost "per-request": S3, HTTP): a request costs 20-50 ms
 * before its first byte and then streams 50-100 MB/s, so skipping one is worth 1-5 MB. 4 MiB holds a
 * whole shard of the common layouts (a few MB compressed; 8 x 180 x 360 float64 Blosc-zstd is 1.7-2.9 MB),
 * so a region read costs one request per shard touched.
 */
export const SHARD_WINDOW = 4 * 2 ** 20;

/**
 * Stores with cheap random access (readCost "cheap": local disk, memory): a read costs about 0.1 ms of CPU
 * (open, stat, read, close), what copying 0.3 MB costs, while a record's region is a small part of a
 * multi-MB shard: a window reaching its bodies would copy many times the bytes wanted (see
 * packages/spec/docs/store-capabilities.md). 64 KiB still takes small shards (coordinates, statics) whole
 * in one read.
 */
export const LOCAL_SHARD_WINDOW = 64 * 2 ** 10;

/**
 * Stores with direct reads (ReadableStore.directReads) read the bodies past the first window in pieces
 * of at most this many bytes, one after another through one reused buffer, each decoded before the next
 * is read: a whole read of a 12 MB shard then touches the window and 1 MiB of scratch per reading worker
 * instead of 12 MB (fresh memory costs a page fault per 4 KiB, about 1.5 us each, and V8 counts it as
 * external memory, which forces full GCs), and a piece is still in cache when it is decoded. A read costs
 * about 0.1 ms of CPU, so a 1 MiB piece keeps that below 5 % of copying and decoding it.
 */
export const LOCAL_PIECE = 2 ** 20;

/**
 * The most bytes an inner chunk of `layout` takes encoded: its raw bytes, plus 1/256 and a few dozen for
 * zstd, 16 for Blosc. Looser than the codec's own maxEncodedLength on purpose: readHead knows it holds a
 * whole object only from an answer shorter than it asked for, so a window must exceed the largest shard,
 * not equal it (with maxEncodedLength a shard of incompressible chunks took two reads).
 */
export function chunkBytesBound(layout: ArrayLayout): number {
  const chunkBytes = product(layout.chunkShape) * itemSize(layout.dtype);
  return chunkBytes + Math.ceil(chunkBytes / 256) + 128;
}

/**
 * The most bytes a shard of `layout` takes when written as we write it: every inner chunk at its codec's
 * worst case (chunkBytesBound), then the index. A shard another writer laid out with gaps can be larger;
 * its remainder is then read past the window.
 */
export function shardBytesBound(layout: ArrayLayout): number {
  return product(chunksPerShard(layout)) * chunkBytesBound(layout) + shardIndexByteLength(layout);
}

/**
 * The first read of a whole shard of `layout`: SHARD_WINDOW, or less when the shard cannot be that large
 * (shardBytesBound). Each reading worker keeps its window buffer, which V8 counts as external memory
 * whether or not it is filled, and 4 MiB windows for 2 MB shards brought a full GC into a process's first
 * read-all.
 */
export function wholeShardWindow(layout: ArrayLayout): number {
  return Math.min(SHARD_WINDOW, shardBytesBound(layout));
}

/**
 * The window for reading the box `sel` of a shard, by what a read of the store costs: a whole shard's
 * (wholeShardWindow) on a per-request store, or on a cheap one when the box is the whole shard.
 */
export function windowFor(
  store: ReadableStore,
  layout: ArrayLayout,
  shardIndex: number[],
  sel: [number, number][],
): number {
  const wide = wholeShardWindow(layout);
  if (store.readCost !== "cheap") return wide;
  // When the box is the whole shard every byte is wanted, so a wide window wastes nothing.
  const whole = sel.every(([a, b], d) => {
    const lo = shardIndex[d]! * layout.shardShape[d]!;
    return a === lo && b === Math.min(lo + layout.shardShape[d]!, layout.shape[d]!);
  });
  return whole ? wide : LOCAL_SHARD_WINDOW;
}

/** What `read` wrote into n bytes taken from the caller's reusable buffer (valid until it is taken again). */
export async function readIntoScratch(
  scratch: ReusableBuffer,
  n: number,
  read: (into: Uint8Array) => Promise<number | undefined>,
): Promise<Uint8Array | undefined> {
  const into = scratch.take(n);
  const got = await read(into);
  return got === undefined ? undefined : into.subarray(0, got);
}

/** getSuffix, into the caller's reusable buffer when the store can. */
async function suffix(object: PinnedObject, n: number, scratch?: ReusableBuffer) {
  const { getSuffixInto } = object;
  if (scratch === undefined || getSuffixInto === undefined) return object.getSuffix(n);
  return readIntoScratch(scratch, n, (into) => getSuffixInto.call(object, n, into));
}

/** The parsed index and the window it came in; `from` is the object offset of `bytes[0]` when known. */
interface Head {
  index: ShardIndex;
  bytes: Uint8Array;
  from: number | undefined;
}

/**
 * Reads the window of `window` bytes (at least the index) through the shard's pin and checks the index: its CRC, and every entry
 * against the object's size when the window turned out to be the whole object. Undefined when absent.
 */
export async function readHead(
  object: PinnedObject,
  layout: ArrayLayout,
  window: number,
  scratch?: ReusableBuffer,
): Promise<Head | undefined> {
  const indexLen = shardIndexByteLength(layout);
  const atStart = layout.indexLocation === "start";
  const ask = Math.max(window, indexLen);
  const key = object.key;
  const bytes = atStart ? await object.getRange(0, ask) : await suffix(object, ask, scratch);
  if (bytes === undefined) return undefined;
  if (bytes.byteLength < indexLen) {
    throw new CorruptShard(
      `shard ${JSON.stringify(key)}: object is shorter than its ${indexLen}-byte index`,
      key,
    );
  }
  // A short answer is the whole object, whose size then bounds every entry.
  const whole = bytes.byteLength < ask;
  const indexBytes = atStart ? bytes.subarray(0, indexLen) : bytes.subarray(bytes.byteLength - indexLen);
  const size = whole ? bytes.byteLength : Number.POSITIVE_INFINITY;
  const index = await parseShardIndex(layout, indexBytes, size, key);
  return { index, bytes, from: atStart || whole ? 0 : undefined };
}
