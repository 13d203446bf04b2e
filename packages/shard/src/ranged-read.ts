import { CorruptShard, SchemaError, type TypedArray } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { allocTyped, matchesDType } from "./dtype.js";
import { checkShardIndex, forEachIndex, linearIndex, product } from "./grid.js";
import { type ArrayLayout, chunksPerShard, validateLayout } from "./metadata.js";
import { decodeChunk, parseShardIndex, shardIndexByteLength, zeroBox } from "./shard-format.js";
import { copyStrided } from "./strided.js";

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

/** Merges byte ranges that overlap or lie within COALESCE_GAP of each other, in offset order. */
export function coalesce(wanted: Wanted[]): Span[] {
  const sorted = [...wanted].sort((a, b) => a.offset - b.offset);
  const spans: Span[] = [];
  for (const w of sorted) {
    const last = spans.at(-1);
    if (last !== undefined && w.offset - last.end <= COALESCE_GAP) {
      last.end = Math.max(last.end, w.offset + w.nbytes);
      last.members.push(w);
    } else {
      spans.push({ start: w.offset, end: w.offset + w.nbytes, members: [w] });
    }
  }
  return spans;
}

function checkSel(layout: ArrayLayout, shardIndex: number[], sel: [number, number][]): void {
  const where = "readShardRegion";
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

/**
 * Reads the box `sel` (array coordinates, inside shard `shardIndex`) of the shard object `key` into a
 * sel-shaped C-order buffer. Fetches the index with one suffix read, then only the inner chunks the box
 * touches, coalescing nearby bodies into one range read each, and decodes only those chunks. Returns
 * undefined when the object is absent; an empty box returns an empty buffer without any read.
 */
export async function readShardRegion(
  store: Store,
  key: string,
  layout: ArrayLayout,
  shardIndex: number[],
  sel: [number, number][],
  out?: TypedArray,
): Promise<TypedArray | undefined> {
  validateLayout(layout);
  checkShardIndex(layout, shardIndex, "readShardRegion");
  checkSel(layout, shardIndex, sel);
  const selShape = sel.map(([a, b]) => b - a);
  const n = product(selShape);
  if (out !== undefined && (!matchesDType(out, layout.dtype) || out.length !== n)) {
    throw new SchemaError(
      `readShardRegion: out must be a ${layout.dtype} typed array of ${n} elements, got ${out.constructor.name}(${out.length})`,
      "/out",
      "readShardRegion",
    );
  }
  const result = out ?? allocTyped(layout.dtype, n);
  if (n === 0) return result;

  const indexLen = shardIndexByteLength(layout);
  const atStart = layout.indexLocation === "start";
  const indexBytes = atStart ? await store.getRange(key, 0, indexLen) : await store.getSuffix(key, indexLen);
  if (indexBytes === undefined) return undefined;
  if (indexBytes.byteLength < indexLen) {
    throw new CorruptShard(
      `shard ${JSON.stringify(key)}: object is shorter than its ${indexLen}-byte index`,
      key,
    );
  }
  const index = await parseShardIndex(layout, indexBytes, Number.POSITIVE_INFINITY, key);

  const { chunkShape, shardShape } = layout;
  const grid = chunksPerShard(layout);
  const shardOrigin = shardIndex.map((s, d) => s * shardShape[d]!);
  const lo = sel.map(([a], d) => Math.floor((a - shardOrigin[d]!) / chunkShape[d]!));
  const hi = sel.map(([, b], d) => Math.ceil((b - shardOrigin[d]!) / chunkShape[d]!));
  const wanted: Wanted[] = [];
  forEachIndex(lo, hi, (idx) => {
    const linear = linearIndex(idx, grid);
    const offset = index.offsets[linear]!;
    if (offset >= 0) {
      wanted.push({ linear, offset, nbytes: index.nbytes[linear]!, idx: [...idx] });
    } else if (out !== undefined) {
      const box = overlap(idx);
      zeroBox(layout, result, selShape, box.dstStart, box.count);
    }
  });

  /** The part of chunk `idx` inside sel: where it starts in the chunk and in the result, and its extent. */
  function overlap(idx: number[]) {
    const srcStart: number[] = [];
    const dstStart: number[] = [];
    const count: number[] = [];
    idx.forEach((k, d) => {
      const c0 = shardOrigin[d]! + k * chunkShape[d]!;
      const a = Math.max(c0, sel[d]![0]);
      const b = Math.min(c0 + chunkShape[d]!, sel[d]![1]);
      srcStart.push(a - c0);
      dstStart.push(a - sel[d]![0]);
      count.push(b - a);
    });
    return { srcStart, dstStart, count };
  }

  const spans = coalesce(wanted);
  // The furthest span also reads the index's worth of bytes past its end: when they are all there, no
  // entry we use can reach into the index or past the object's end (the size is otherwise unknown).
  const furthest = atStart
    ? -1
    : spans.reduce((best, s, i) => (s.end > (spans[best]?.end ?? -1) ? i : best), 0);
  await Promise.all(
    spans.map(async (span, i) => {
      const need = span.end - span.start;
      const ask = i === furthest ? need + indexLen : need;
      const bytes = await store.getRange(key, span.start, ask);
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
      await Promise.all(
        span.members.map(async (w) => {
          const body = bytes.subarray(w.offset - span.start, w.offset - span.start + w.nbytes);
          const chunk = await decodeChunk(layout, body, key, w.linear);
          const box = overlap(w.idx);
          copyStrided(chunk, chunkShape, box.srcStart, result, selShape, box.dstStart, box.count);
        }),
      );
    }),
  );
  return result;
}
