import { crc32c, decodeBoxes, encodeInto, maxEncodedLength } from "@zarr-stream/codecs";
import { CorruptShard, SchemaError, type TypedArray } from "@zarr-stream/spec";
import { allocTyped, allZeroBytes, bytesOf, itemSize, matchesDType } from "./dtype.js";
import { checkShardIndex, forEachIndex, linearIndex, product } from "./grid.js";
import { type ArrayLayout, chunksPerShard, validateLayout } from "./metadata.js";
import { copyStrided } from "./strided.js";

/**
 * A parsed shard index: entry i describes inner chunk i in C order over the shard's chunk grid. Missing
 * chunks (the all-ones sentinel on disk) have offset and nbytes -1.
 */
export interface ShardIndex {
  offsets: Float64Array;
  nbytes: Float64Array;
}

const MISSING = 0xffff_ffff_ffff_ffffn;

/** Bytes of the index plus its CRC-32C trailer: 16 per inner chunk + 4. */
export function shardIndexByteLength(layout: ArrayLayout): number {
  return 16 * product(chunksPerShard(layout)) + 4;
}

function corrupt(key: string, reason: string): CorruptShard {
  return new CorruptShard(`shard ${JSON.stringify(key)}: ${reason}`, key);
}

/**
 * Checks the CRC and that every present entry lies inside the object's data area (between the bodies'
 * start and the index), then returns the entries. `objectSize` may be Infinity when only the index was
 * fetched; the caller then checks the upper bound when it reads the bodies.
 */
export async function parseShardIndex(
  layout: ArrayLayout,
  indexWithCrc: Uint8Array,
  objectSize: number,
  key = "",
): Promise<ShardIndex> {
  const indexLen = shardIndexByteLength(layout);
  if (indexWithCrc.byteLength !== indexLen) {
    throw corrupt(key, `index is ${indexWithCrc.byteLength} bytes, expected ${indexLen}`);
  }
  if (objectSize < indexLen)
    throw corrupt(key, `object is ${objectSize} bytes, shorter than its ${indexLen}-byte index`);
  const view = new DataView(indexWithCrc.buffer, indexWithCrc.byteOffset, indexLen);
  const n = (indexLen - 4) / 16;
  const stored = view.getUint32(n * 16, true);
  const actual = await crc32c(indexWithCrc.subarray(0, n * 16));
  if (stored !== actual) throw corrupt(key, `index CRC-32C is ${hex(stored)}, computed ${hex(actual)}`);

  const atStart = layout.indexLocation === "start";
  const lo = BigInt(atStart ? indexLen : 0);
  const hi = Number.isFinite(objectSize)
    ? BigInt(atStart ? objectSize : objectSize - indexLen)
    : BigInt(Number.MAX_SAFE_INTEGER);
  const offsets = new Float64Array(n);
  const nbytes = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const o = view.getBigUint64(16 * i, true);
    const len = view.getBigUint64(16 * i + 8, true);
    if (o === MISSING && len === MISSING) {
      offsets[i] = -1;
      nbytes[i] = -1;
      continue;
    }
    if (o === MISSING || len === MISSING)
      throw corrupt(key, `index entry ${i} is half missing (${o}, ${len})`);
    if (len === 0n) throw corrupt(key, `index entry ${i} has zero length`);
    if (o < lo || o + len > hi) {
      throw corrupt(key, `index entry ${i} [${o}, ${o + len}) lies outside the data area [${lo}, ${hi})`);
    }
    offsets[i] = Number(o);
    nbytes[i] = Number(len);
  }
  return { offsets, nbytes };
}

function hex(x: number): string {
  return `0x${x.toString(16).padStart(8, "0")}`;
}

function checkShardBuffer(layout: ArrayLayout, data: TypedArray, where: string, pointer: string): void {
  const n = product(layout.shardShape);
  if (!matchesDType(data, layout.dtype) || data.length !== n) {
    throw new SchemaError(
      `${where}: ${pointer.slice(1)} must be a ${layout.dtype} typed array of ${n} elements (shard [${layout.shardShape}]), got ${data.constructor.name}(${data.length})`,
      pointer,
      where,
    );
  }
}

/** True when the box [0, count) of a chunk is contiguous in the row-major shard buffer (no copy needed). */
function isContiguous(start: readonly number[], count: readonly number[], shape: readonly number[]): boolean {
  let d = 0;
  while (d < count.length && count[d] === 1) d++;
  for (let k = d + 1; k < count.length; k++) if (count[k] !== shape[k] || start[k] !== 0) return false;
  return true;
}

interface InnerChunk {
  linear: number;
  /** Origin inside the shard buffer. */
  origin: number[];
  /** Extent inside the array's shape (the rest of the chunk is past the array's edge). */
  valid: number[];
}

function innerChunks(layout: ArrayLayout, shardIndex: readonly number[]): InnerChunk[] {
  const grid = chunksPerShard(layout);
  const out: InnerChunk[] = [];
  forEachIndex(
    grid.map(() => 0),
    grid,
    (idx) => {
      const origin = idx.map((i, d) => i * layout.chunkShape[d]!);
      const valid = origin.map((o, d) => {
        const arrayOrigin = shardIndex[d]! * layout.shardShape[d]! + o;
        return Math.max(0, Math.min(layout.chunkShape[d]!, layout.shape[d]! - arrayOrigin));
      });
      out.push({ linear: linearIndex(idx, grid), origin, valid });
    },
  );
  return out;
}

/** The chunk's elements in its own C order: a view when contiguous in the shard buffer, else a copy. */
function extractChunk(layout: ArrayLayout, data: TypedArray, origin: number[]): TypedArray {
  const { chunkShape, shardShape } = layout;
  const size = product(chunkShape);
  if (isContiguous(origin, chunkShape, shardShape)) {
    let start = 0;
    for (let d = 0; d < origin.length; d++) start = start * shardShape[d]! + origin[d]!;
    return data.subarray(start, start + size);
  }
  const chunk = allocTyped(layout.dtype, size);
  copyStrided(
    data,
    shardShape,
    origin,
    chunk,
    chunkShape,
    chunkShape.map(() => 0),
    chunkShape,
  );
  return chunk;
}

/**
 * Whether the in-shape part (`valid`, from the chunk's origin) of a chunk is all zero. An edge chunk's
 * part is scanned in place, a row (run along the last dim) at a time, so the first nonzero row ends the
 * scan: a copy of the part first cost a chunk-sized allocation and a strided copy on the JS thread for
 * every edge chunk of every shard written.
 */
function validPartIsZero(layout: ArrayLayout, chunk: TypedArray, valid: number[]): boolean {
  const shape = layout.chunkShape;
  const bytes = bytesOf(chunk);
  if (valid.every((v, d) => v === shape[d])) return allZeroBytes(bytes);
  if (valid.some((v) => v === 0)) return true;
  const size = itemSize(layout.dtype);
  const last = shape.length - 1;
  const rowBytes = valid[last]! * size;
  const pos: number[] = new Array(last).fill(0);
  for (;;) {
    let row = 0;
    for (let d = 0; d < last; d++) row = row * shape[d]! + pos[d]!;
    const start = row * shape[last]! * size;
    if (!allZeroBytes(bytes.subarray(start, start + rowBytes))) return false;
    let d = last - 1;
    while (d >= 0 && ++pos[d]! === valid[d]) pos[d--] = 0;
    if (d < 0) return true;
  }
}

/**
 * Encodes one shard object from the full shard-shaped buffer `data` (C order). Inner chunks wholly past
 * the array's shape, or whose in-shape part is all zero, are left out (the index marks them missing).
 * Chunks are compressed concurrently; `data` must not change until the promise settles.
 */
export async function encodeShard(
  layout: ArrayLayout,
  shardIndex: number[],
  data: TypedArray,
): Promise<Uint8Array> {
  validateLayout(layout);
  checkShardIndex(layout, shardIndex, "encodeShard");
  checkShardBuffer(layout, data, "encodeShard", "/data");
  const chunks = innerChunks(layout, shardIndex);
  return assembleShard(
    layout,
    chunks,
    chunks.map((c) => (c.valid.some((v) => v === 0) ? undefined : extractChunk(layout, data, c.origin))),
  );
}

/**
 * A caller's buffer to work in instead of a fresh one: `take(n)` returns a buffer of at least n bytes
 * (growing it when needed). What is built in it (an encoded shard, a read window) is a view into it, valid
 * until the buffer is taken again. The writer keeps one per shard encode in flight and the reader one per
 * shard read, so steady-state encoding and reading allocate nothing.
 */
export interface ReusableBuffer {
  take(minBytes: number): Uint8Array;
}

/**
 * Encodes one shard object from its inner chunks, already apart: `chunks[i]` is inner chunk i (C order
 * over the shard's chunk grid) in its own C order, so nothing is copied before compression. Same output
 * as encodeShard of the assembled buffer. The chunks must not change until the promise settles.
 */
export async function encodeShardChunks(
  layout: ArrayLayout,
  shardIndex: number[],
  chunks: readonly TypedArray[],
  output?: ReusableBuffer,
): Promise<Uint8Array> {
  const inner = checkedChunks(layout, shardIndex, chunks, "encodeShardChunks");
  return assembleShard(
    layout,
    inner,
    inner.map((c, i) => (c.valid.some((v) => v === 0) ? undefined : chunks[i])),
    output,
  );
}

/**
 * What a writer keeps of one shard between writes of it, per inner chunk: its encoded frame; null when the
 * shard leaves the chunk out (wholly past the array's shape, or its in-shape part all zero); undefined when
 * not known (never encoded, or changed since: whoever changes a chunk sets its entry back to undefined).
 * `shape` is the array shape the entries were made for: at another shape a chunk's in-shape part differs,
 * so a write at another shape starts the entries over.
 */
export interface KnownFrames {
  shape: readonly number[] | undefined;
  frames: (Uint8Array | null | undefined)[];
}

/**
 * encodeShardChunks that encodes only the chunks `known` has no entry for and records them there: a shard
 * written again after a few of its chunks changed (a time shard committed record by record) costs the
 * encoding of those chunks and a copy of the others' frames, where encoding it whole would cost a time
 * shard of n records committed one at a time n(n+1)/2 records' encoding. Same bytes as encodeShardChunks.
 * The frames in `known` are trusted as this layout's encodings of those chunks: it is the caller's own
 * record of what it wrote, never read from a store.
 */
export async function encodeShardChunksKnown(
  layout: ArrayLayout,
  shardIndex: number[],
  chunks: readonly TypedArray[],
  known: KnownFrames,
  output?: ReusableBuffer,
): Promise<Uint8Array> {
  const inner = checkedChunks(layout, shardIndex, chunks, "encodeShardChunksKnown");
  if (
    typeof known !== "object" ||
    known === null ||
    !Array.isArray(known.frames) ||
    known.frames.some((f) => !(f === undefined || f === null || f instanceof Uint8Array))
  ) {
    throw new SchemaError(
      "encodeShardChunksKnown: known must be { shape, frames } with each frame a Uint8Array, null or undefined",
      "/known",
      "encodeShardChunksKnown",
    );
  }
  const shape = known.shape;
  if (
    shape === undefined ||
    shape.some((n, d) => n !== layout.shape[d]) ||
    known.frames.length !== inner.length
  ) {
    known.shape = [...layout.shape];
    known.frames = new Array(inner.length).fill(undefined);
  }
  const { frames } = known;
  const bodies = inner.map((c, i) => {
    if (frames[i] !== undefined) return undefined;
    const chunk = chunks[i]!;
    if (c.valid.some((v) => v === 0) || validPartIsZero(layout, chunk, c.valid)) {
      frames[i] = null;
      return undefined;
    }
    return bytesOf(chunk);
  });
  let knownBytes = 0;
  for (const f of frames) if (f) knownBytes += f.length;
  let bound = 0;
  for (const b of bodies) if (b !== undefined) bound += maxEncodedLength(layout.codec, b.length);
  const indexLen = shardIndexByteLength(layout);
  const out = output?.take(indexLen + knownBytes + bound) ?? new Uint8Array(indexLen + knownBytes + bound);
  if (bound > 0) {
    // The new frames are encoded after room for the index and the known frames, and copied out (they are
    // kept) before the shard is laid out over them.
    const sizes = new Uint32Array(bodies.length);
    const from = indexLen + knownBytes;
    const kept = out.slice(from, await encodeInto(layout.codec, bodies, out, from, sizes));
    let at = 0;
    bodies.forEach((b, i) => {
      if (b === undefined) return;
      frames[i] = kept.subarray(at, at + sizes[i]!);
      at += sizes[i]!;
    });
  }
  const sizes = new Uint32Array(frames.length);
  const atStart = layout.indexLocation === "start";
  let pos = atStart ? indexLen : 0;
  frames.forEach((f, i) => {
    if (!f) return;
    out.set(f, pos);
    pos += f.length;
    sizes[i] = f.length;
  });
  await writeIndex(
    layout,
    out,
    frames.map((f) => !f),
    sizes,
  );
  const total = atStart ? pos : pos + indexLen;
  return output === undefined ? out.slice(0, total) : out.subarray(0, total);
}

/** The inner chunks of shard `shardIndex`, after checking that `chunks` holds one array of each. */
function checkedChunks(
  layout: ArrayLayout,
  shardIndex: number[],
  chunks: readonly TypedArray[],
  what: string,
): InnerChunk[] {
  validateLayout(layout);
  checkShardIndex(layout, shardIndex, what);
  const inner = innerChunks(layout, shardIndex);
  if (!Array.isArray(chunks) || chunks.length !== inner.length) {
    throw new SchemaError(
      `${what}: a shard of chunk grid [${chunksPerShard(layout)}] takes ${inner.length} chunks, got ${Array.isArray(chunks) ? chunks.length : typeof chunks}`,
      "/chunks",
      what,
    );
  }
  const size = product(layout.chunkShape);
  chunks.forEach((c, i) => {
    if (!matchesDType(c, layout.dtype) || c.length !== size) {
      throw new SchemaError(
        `${what}: chunk ${i} must be a ${layout.dtype} typed array of ${size} elements (chunk [${layout.chunkShape}]), got ${c?.constructor?.name}(${c?.length})`,
        `/chunks/${i}`,
        what,
      );
    }
  });
  return inner;
}

/**
 * Compresses the given chunks (undefined: past the array's edge) straight into the shard's buffer,
 * bodies in chunk order after (index "start") or before (index "end") the index, then fills in the index.
 */
async function assembleShard(
  layout: ArrayLayout,
  chunks: InnerChunk[],
  data: (TypedArray | undefined)[],
  output?: ReusableBuffer,
): Promise<Uint8Array> {
  const bodies = chunks.map((c, i) => {
    const chunk = data[i];
    return chunk === undefined || validPartIsZero(layout, chunk, c.valid) ? undefined : bytesOf(chunk);
  });
  const indexLen = shardIndexByteLength(layout);
  let bound = indexLen;
  for (const b of bodies) if (b !== undefined) bound += maxEncodedLength(layout.codec, b.length);
  const out = output?.take(bound) ?? new Uint8Array(bound);
  const atStart = layout.indexLocation === "start";
  const sizes = new Uint32Array(bodies.length);
  const bodiesEnd = await encodeInto(layout.codec, bodies, out, atStart ? indexLen : 0, sizes);
  await writeIndex(
    layout,
    out,
    bodies.map((b) => b === undefined),
    sizes,
  );
  const total = bodiesEnd + (atStart ? 0 : indexLen);
  // Without a caller's buffer, return a right-sized copy rather than a view pinning the whole bound.
  return output === undefined ? out.slice(0, total) : out.subarray(0, total);
}

/**
 * Writes the index and its CRC into `out`, whose bodies lie back to back in chunk order (chunk i takes
 * sizes[i] bytes, none where missing[i]) after the index ("start") or from byte 0 with the index after them.
 */
async function writeIndex(layout: ArrayLayout, out: Uint8Array, missing: boolean[], sizes: Uint32Array) {
  const indexLen = shardIndexByteLength(layout);
  const atStart = layout.indexLocation === "start";
  let pos = atStart ? indexLen : 0;
  let bodiesEnd = pos;
  for (let i = 0; i < sizes.length; i++) if (!missing[i]) bodiesEnd += sizes[i]!;
  const indexAt = atStart ? 0 : bodiesEnd;
  const view = new DataView(out.buffer, out.byteOffset + indexAt, indexLen);
  const n = sizes.length;
  for (let i = 0; i < n; i++) {
    if (missing[i]) {
      view.setBigUint64(16 * i, MISSING, true);
      view.setBigUint64(16 * i + 8, MISSING, true);
      continue;
    }
    view.setBigUint64(16 * i, BigInt(pos), true);
    view.setBigUint64(16 * i + 8, BigInt(sizes[i]!), true);
    pos += sizes[i]!;
  }
  view.setUint32(16 * n, await crc32c(out.subarray(indexAt, indexAt + 16 * n)), true);
}

/** Read-only zeros per dtype, grown on demand, so zeroing a missing chunk's box allocates nothing. */
const zeroSources = new Map<string, TypedArray>();

function zerosOf(layout: ArrayLayout, n: number): TypedArray {
  let z = zeroSources.get(layout.dtype);
  if (z === undefined || z.length < n) {
    z = allocTyped(layout.dtype, n);
    zeroSources.set(layout.dtype, z);
  }
  return z.subarray(0, n);
}

/** Zeroes a box of `out` (the part of an absent chunk or shard) when `out` may hold anything there. */
export function zeroBox(
  layout: ArrayLayout,
  out: TypedArray,
  outShape: number[],
  start: number[],
  count: number[],
) {
  const zeros = zerosOf(layout, product(count));
  copyStrided(
    zeros,
    count,
    count.map(() => 0),
    out,
    outShape,
    start,
    count,
  );
}

/**
 * Decodes a whole shard object into a shard-shaped C-order buffer (reusing `out` when given); missing
 * inner chunks are zero. Verifies the index CRC, every index entry's bounds and every chunk's decoded
 * length; any inconsistency is CorruptShard naming `key`.
 */
export async function decodeShard(
  layout: ArrayLayout,
  bytes: Uint8Array,
  key = "",
  out?: TypedArray,
): Promise<TypedArray> {
  validateLayout(layout);
  if (out !== undefined) checkShardBuffer(layout, out, "decodeShard", "/out");
  const indexLen = shardIndexByteLength(layout);
  if (bytes.byteLength < indexLen) {
    throw corrupt(key, `object is ${bytes.byteLength} bytes, shorter than its ${indexLen}-byte index`);
  }
  const indexBytes =
    layout.indexLocation === "start"
      ? bytes.subarray(0, indexLen)
      : bytes.subarray(bytes.byteLength - indexLen);
  const index = await parseShardIndex(layout, indexBytes, bytes.byteLength, key);

  const fresh = out === undefined;
  const result = out ?? allocTyped(layout.dtype, product(layout.shardShape));
  const { chunkShape, shardShape } = layout;
  const grid = chunksPerShard(layout);
  // The present chunks decode as one job, each straight into its place (decodeBoxes), as reads do.
  const frames: Uint8Array[] = [];
  const ids: number[] = [];
  const boxes: number[] = [];
  forEachIndex(
    grid.map(() => 0),
    grid,
    (idx) => {
      const i = linearIndex(idx, grid);
      const origin = idx.map((k, d) => k * chunkShape[d]!);
      const o = index.offsets[i]!;
      if (o < 0) {
        if (!fresh) zeroBox(layout, result, shardShape, origin, chunkShape);
        return;
      }
      frames.push(bytes.subarray(o, o + index.nbytes[i]!));
      ids.push(i);
      boxes.push(...chunkShape.map(() => 0), ...origin, ...chunkShape);
    },
  );
  await decodeBoxes(
    layout.codec,
    frames,
    Int32Array.from(chunkShape),
    itemSize(layout.dtype),
    bytesOf(result),
    Int32Array.from(shardShape),
    Int32Array.from(boxes),
    key,
    ids,
  );
  return result;
}
