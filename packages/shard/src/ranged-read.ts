import { decodeBoxes } from "@zarr-stream/codecs";
import { CorruptShard, SchemaError, type TypedArray } from "@zarr-stream/spec";
import type { PinnedObject, ReadableStore } from "@zarr-stream/store";
import { allocTyped, bytesOf, itemSize, matchesDType } from "./dtype.js";
import { checkShardIndex, forEachIndex, linearIndex, product } from "./grid.js";
import { type ArrayLayout, chunksPerShard, validateLayout } from "./metadata.js";
import { readPinned } from "./pinned-read.js";
import { chunkBytesBound, LOCAL_PIECE, readHead, readIntoScratch, windowFor } from "./read-window.js";
import { settleAll } from "./settle.js";
import { type ReusableBuffer, shardIndexByteLength, zeroBox } from "./shard-format.js";

/** Chunk bodies closer than this are fetched in one read: a few KiB extra beats another round trip. */
export const COALESCE_GAP = 4096;

interface Wanted {
  linear: number;
  offset: number;
  nbytes: number;
  /** Chunk index along each dim inside the shard. */
  idx: number[];
}

interface Span {
  start: number;
  end: number;
  members: Wanted[];
}

/**
 * Merges byte ranges that overlap or lie within COALESCE_GAP of each other, in offset order, into spans
 * of at most `maxSpan` bytes (a body larger than that is a span of its own).
 */
export function coalesce(wanted: Wanted[], maxSpan = Number.POSITIVE_INFINITY): Span[] {
  const sorted = [...wanted].sort((a, b) => a.offset - b.offset);
  const spans: Span[] = [];
  for (const w of sorted) {
    const last = spans.at(-1);
    const end = w.offset + w.nbytes;
    if (
      last !== undefined &&
      w.offset - last.end <= COALESCE_GAP &&
      Math.max(last.end, end) - last.start <= maxSpan
    ) {
      last.end = Math.max(last.end, end);
      last.members.push(w);
    } else {
      spans.push({ start: w.offset, end: w.offset + w.nbytes, members: [w] });
    }
  }
  return spans;
}

/**
 * Buffers a caller reading many shards, one after another, lends readShardInto: one for the first read's
 * window and one for the bodies past it. Each is free again once the call's promise settles.
 */
export interface ReadScratch {
  window: ReusableBuffer;
  bodies: ReusableBuffer;
}

/**
 * Where a shard's part of a read lands: the box of sel's extent at `start` of the C-order `data`, whose
 * shape is `shape`. `zeroed` says the box is all zero already, so chunks the shard lacks need no write.
 */
export interface ReadTarget {
  data: TypedArray;
  shape: number[];
  start: number[];
  zeroed: boolean;
}

function checkSel(layout: ArrayLayout, shardIndex: number[], sel: [number, number][], where: string): void {
  if (!Array.isArray(sel) || sel.length !== layout.shape.length) {
    throw new SchemaError(`${where}: sel must have rank ${layout.shape.length}`, "/sel", where);
  }
  sel.forEach((r, d) => {
    const lo = shardIndex[d]! * layout.shardShape[d]!;
    const hi = Math.min(lo + layout.shardShape[d]!, layout.shape[d]!);
    const ok =
      Array.isArray(r) &&
      Number.isSafeInteger(r[0]) &&
      Number.isSafeInteger(r[1]) &&
      lo <= r[0] &&
      r[0] <= r[1];
    if (!ok || r[1] > hi) {
      throw new SchemaError(
        `${where}: sel[${d}] = ${JSON.stringify(r)} is not inside shard ${shardIndex[d]} of dim ${d} ([${lo}, ${hi}))`,
        `/sel/${d}`,
        where,
      );
    }
  });
}

function checkTarget(layout: ArrayLayout, sel: [number, number][], t: ReadTarget, where: string): void {
  const fits =
    matchesDType(t.data, layout.dtype) &&
    Array.isArray(t.shape) &&
    Array.isArray(t.start) &&
    t.shape.length === sel.length &&
    t.start.length === sel.length &&
    t.data.length === product(t.shape) &&
    sel.every(
      ([a, b], d) =>
        Number.isSafeInteger(t.start[d]) && t.start[d]! >= 0 && t.start[d]! + b - a <= t.shape[d]!,
    );
  if (!fits) {
    throw new SchemaError(
      `${where}: target must be a ${layout.dtype} typed array of shape [${t.shape}] holding the box of sel at [${t.start}]`,
      "/target",
      where,
    );
  }
}

/**
 * Reads the box `sel` (array coordinates, inside shard `shardIndex`) of the shard object `key` into
 * `target`, decoding only the inner chunks the box touches, each copied once into place. The first read
 * takes a window from the index end (see read-window.ts) holding the index and, when the object fits, every
 * body; other bodies are fetched with one range read per run of nearby bodies. Returns false, writing
 * nothing, when the object is absent. With `scratch` and a store that has getSuffixInto and getRangeInto,
 * the window and the bodies past it are read into the caller's buffers, so a caller reading many shards
 * allocates nothing per shard (a second run of bodies, when the wanted ones lie apart, gets a buffer of
 * its own).
 *
 * The index and the bodies come from one version of the object when the store can pin one
 * (ReadableStore.pin): a shard replaced mid-read is read again from its new version (the box is then
 * written again whole, and a shard gone by then leaves what the earlier attempt wrote, returning false),
 * and TornRead after SHARD_READ_ATTEMPTS. A store without pins reads as before, not snapshot-consistent.
 */
export async function readShardInto(
  store: ReadableStore,
  key: string,
  layout: ArrayLayout,
  shardIndex: number[],
  sel: [number, number][],
  target: ReadTarget,
  scratch?: ReadScratch,
): Promise<boolean> {
  const where = "readShardInto";
  validateLayout(layout);
  checkShardIndex(layout, shardIndex, where);
  checkSel(layout, shardIndex, sel, where);
  checkTarget(layout, sel, target, where);
  if (sel.some(([a, b]) => a === b)) return true;
  const window = windowFor(store, layout, shardIndex, sel);
  const piece = store.directReads === true ? pieceBytes(layout) : undefined;
  return readPinned(store, key, (object, attempt) =>
    // A retry may find chunks absent that the attempt before wrote: they must be zeroed, not skipped.
    readShardOnce(
      object,
      layout,
      shardIndex,
      sel,
      attempt === 1 ? target : { ...target, zeroed: false },
      window,
      piece,
      scratch,
    ),
  );
}

/** One attempt of readShardInto, every read through `object`; `piece`: see readBodies. */
async function readShardOnce(
  object: PinnedObject,
  layout: ArrayLayout,
  shardIndex: number[],
  sel: [number, number][],
  target: ReadTarget,
  window: number,
  piece: number | undefined,
  scratch: ReadScratch | undefined,
): Promise<boolean> {
  const key = object.key;
  const head = await readHead(object, layout, window, scratch?.window);
  if (head === undefined) return false;
  const { chunkShape, shardShape } = layout;
  const grid = chunksPerShard(layout);
  const shardOrigin = shardIndex.map((s, d) => s * shardShape[d]!);
  const lo = sel.map(([a], d) => Math.floor((a - shardOrigin[d]!) / chunkShape[d]!));
  const hi = sel.map(([, b], d) => Math.ceil((b - shardOrigin[d]!) / chunkShape[d]!));

  /** The part of chunk `idx` inside sel: where it starts in the chunk and in the target, and its extent. */
  const overlap = (idx: number[]) => {
    const srcStart: number[] = [];
    const dstStart: number[] = [];
    const count: number[] = [];
    idx.forEach((k, d) => {
      const c0 = shardOrigin[d]! + k * chunkShape[d]!;
      const a = Math.max(c0, sel[d]![0]);
      const b = Math.min(c0 + chunkShape[d]!, sel[d]![1]);
      srcStart.push(a - c0);
      dstStart.push(target.start[d]! + a - sel[d]![0]);
      count.push(b - a);
    });
    return { srcStart, dstStart, count };
  };
  const targetBytes = bytesOf(target.data);
  const targetShape = Int32Array.from(target.shape);
  const chunkShapeI32 = Int32Array.from(chunkShape);
  const itemBytes = itemSize(layout.dtype);
  /** Decodes the bodies of one read (one native job) and copies each chunk's part into place. */
  const place = (members: Wanted[], bodyOf: (w: Wanted) => Uint8Array) => {
    if (members.length === 0) return Promise.resolve();
    const boxes = new Int32Array(members.length * 3 * chunkShape.length);
    members.forEach((w, i) => {
      const box = overlap(w.idx);
      boxes.set([...box.srcStart, ...box.dstStart, ...box.count], i * 3 * chunkShape.length);
    });
    return decodeBoxes(
      layout.codec,
      members.map(bodyOf),
      chunkShapeI32,
      itemBytes,
      targetBytes,
      targetShape,
      boxes,
      key,
      members.map((w) => w.linear),
    );
  };

  const { index, bytes, from } = head;
  const inside: Wanted[] = [];
  const outside: Wanted[] = [];
  forEachIndex(lo, hi, (idx) => {
    const linear = linearIndex(idx, grid);
    const offset = index.offsets[linear]!;
    const nbytes = index.nbytes[linear]!;
    if (offset < 0) {
      if (!target.zeroed) {
        const box = overlap(idx);
        zeroBox(layout, target.data, target.shape, box.dstStart, box.count);
      }
      return;
    }
    const w = { linear, offset, nbytes, idx: [...idx] };
    if (from !== undefined && offset >= from && offset + nbytes <= from + bytes.byteLength) inside.push(w);
    else outside.push(w);
  });
  await settleAll([
    place(inside, (w) => bytes.subarray(w.offset - from!, w.offset - from! + w.nbytes)),
    readBodies(object, layout, outside, place, piece, scratch?.bodies),
  ]);
  return true;
}

/**
 * The longest piece a direct store's bodies are read in: LOCAL_PIECE, or 4 chunks at their worst case
 * when that is more, so that a piece's decode still splits over a few cores (4 MiB chunks read one per
 * piece ran 0.85x as fast as in one read).
 */
function pieceBytes(layout: ArrayLayout): number {
  return Math.max(LOCAL_PIECE, 4 * chunkBytesBound(layout));
}

/**
 * Fetches bodies the first read did not hold, one range read per coalesced span, and places each. With
 * a `piece` size (a store with direct reads: pieceBytes) the spans are at most that long and read one
 * after another through the caller's buffer, each placed before the next is read (see LOCAL_PIECE);
 * otherwise the spans are as long as the gaps allow and read at once, as each read costs a round trip.
 */
async function readBodies(
  object: PinnedObject,
  layout: ArrayLayout,
  wanted: Wanted[],
  place: (members: Wanted[], bodyOf: (w: Wanted) => Uint8Array) => Promise<void>,
  piece: number | undefined,
  scratch?: ReusableBuffer,
): Promise<void> {
  const key = object.key;
  const spans = coalesce(wanted, piece);
  const indexLen = shardIndexByteLength(layout);
  // Past the window of an index-at-end shard, the object's size is unknown: the furthest span also reads
  // the index's worth of bytes past its end, so no entry we use can reach into the index or past the end.
  const furthest =
    layout.indexLocation === "start"
      ? -1
      : spans.reduce((best, s, i) => (s.end > (spans[best]?.end ?? -1) ? i : best), 0);
  const readSpan = async (span: Span, i: number, into: ReusableBuffer | undefined) => {
    const need = span.end - span.start;
    const ask = i === furthest ? need + indexLen : need;
    const bytes = await range(object, span.start, ask, into);
    if (bytes === undefined) {
      throw new CorruptShard(
        `shard ${JSON.stringify(key)}: object vanished between index and body reads`,
        key,
      );
    }
    if (bytes.byteLength < ask) {
      throw new CorruptShard(
        `shard ${JSON.stringify(key)}: index entries reach byte ${span.end}, past the data area (object read ${span.start + bytes.byteLength} bytes${i === furthest ? " including the index" : ""})`,
        key,
      );
    }
    await place(span.members, (w) => bytes.subarray(w.offset - span.start, w.offset - span.start + w.nbytes));
  };
  if (piece !== undefined) {
    for (let i = 0; i < spans.length; i++) await readSpan(spans[i]!, i, scratch);
    return;
  }
  // The spans are read at once: the caller's buffer serves the first.
  await settleAll(spans.map((span, i) => readSpan(span, i, i === 0 ? scratch : undefined)));
}

/** getRange, into the caller's reusable buffer when the store can. */
function range(object: PinnedObject, offset: number, n: number, scratch?: ReusableBuffer) {
  const { getRangeInto } = object;
  if (scratch === undefined || getRangeInto === undefined) return object.getRange(offset, n);
  return readIntoScratch(scratch, n, (into) => getRangeInto.call(object, offset, n, into));
}

/**
 * Reads the box `sel` (array coordinates, inside shard `shardIndex`) of the shard object `key` into a
 * sel-shaped C-order buffer (`out` when given: chunks the shard lacks are zeroed there), as readShardInto
 * does. Returns undefined when the object is absent; an empty box returns an empty buffer without any read.
 */
export async function readShardRegion(
  store: ReadableStore,
  key: string,
  layout: ArrayLayout,
  shardIndex: number[],
  sel: [number, number][],
  out?: TypedArray,
): Promise<TypedArray | undefined> {
  validateLayout(layout);
  checkShardIndex(layout, shardIndex, "readShardRegion");
  checkSel(layout, shardIndex, sel, "readShardRegion");
  const selShape = sel.map(([a, b]) => b - a);
  const n = product(selShape);
  if (out !== undefined && (!matchesDType(out, layout.dtype) || out.length !== n)) {
    throw new SchemaError(
      `readShardRegion: out must be a ${layout.dtype} typed array of ${n} elements, got ${out.constructor.name}(${out.length})`,
      "/out",
      "readShardRegion",
    );
  }
  const data = out ?? allocTyped(layout.dtype, n);
  const target = { data, shape: selShape, start: selShape.map(() => 0), zeroed: out === undefined };
  return (await readShardInto(store, key, layout, shardIndex, sel, target)) ? data : undefined;
}
