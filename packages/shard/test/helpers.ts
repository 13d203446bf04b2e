import { crc32c } from "@zarr-stream/codecs";
import type { DType, TypedArray } from "@zarr-stream/spec";
import { MemoryStore, type ReadCost, type Store } from "@zarr-stream/store";
import { type ArrayLayout, shardIndexByteLength } from "../src/index.js";

export const STREAM_DTYPES: DType[] = ["float64", "float32", "int32", "int64", "uint8"];
export const ALL_DTYPES: DType[] = [...STREAM_DTYPES, "uint32", "uint64"];

export function product(xs: readonly number[]): number {
  return xs.reduce((a, b) => a * b, 1);
}

/** Deterministic bytes (xorshift32) so a failing seed reproduces; raw bytes also make NaN payloads. */
export function randomBytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let s = seed >>> 0 || 0x9e3779b9;
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    out[i] = s & 0xff;
  }
  return out;
}

export function bytesOf(a: TypedArray): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/** The naive reference: element k of the row-major box, visited by decomposing k, one element at a time. */
export function naiveBoxOffsets(
  shape: readonly number[],
  start: readonly number[],
  count: readonly number[],
): number[] {
  const n = product(count);
  const out: number[] = [];
  for (let k = 0; k < n; k++) {
    let rem = k;
    const idx = new Array<number>(count.length);
    for (let d = count.length - 1; d >= 0; d--) {
      idx[d] = rem % count[d]!;
      rem = Math.floor(rem / count[d]!);
    }
    let off = 0;
    for (let d = 0; d < shape.length; d++) off = off * shape[d]! + start[d]! + idx[d]!;
    out.push(off);
  }
  return out;
}

/** Copies a box element by element through byte views (the bitwise reference for copyStrided). */
export function naiveCopy(
  src: TypedArray,
  srcShape: number[],
  srcStart: number[],
  dst: TypedArray,
  dstShape: number[],
  dstStart: number[],
  count: number[],
): void {
  const size = src.BYTES_PER_ELEMENT;
  const s = bytesOf(src);
  const t = bytesOf(dst);
  const from = naiveBoxOffsets(srcShape, srcStart, count);
  const to = naiveBoxOffsets(dstShape, dstStart, count);
  from.forEach((f, i) => {
    for (let b = 0; b < size; b++) t[to[i]! * size + b] = s[f * size + b]!;
  });
}

export function layoutOf(
  partial: Partial<ArrayLayout> &
    Pick<ArrayLayout, "shape" | "shardShape" | "chunkShape" | "dtype" | "codec">,
): ArrayLayout {
  return {
    dimensionNames: partial.shape.map((_, i) => `d${i}`),
    attributes: {},
    ...partial,
  };
}

export interface CallLog {
  get: number;
  getSuffix: number;
  getRange: { offset: number; length: number }[];
}

/** Every read a CallLog saw. */
export function readCount(log: CallLog): number {
  return log.get + log.getSuffix + log.getRange.length;
}

/**
 * A Store that counts the reads it forwards, to check how many round trips a read costs. `readCost` may
 * differ from `inner`'s (say "per-request" over a MemoryStore), since the reader sizes its first read by it.
 */
export function countingStore(
  inner: Store = new MemoryStore(),
  readCost: ReadCost | undefined = inner.readCost,
): {
  store: Store;
  log: CallLog;
  reset(): void;
} {
  const log: CallLog = { get: 0, getSuffix: 0, getRange: [] };
  const store: Store = {
    url: inner.url,
    readCost,
    // A store made to cost a round trip per read stands for a server: its reads are not direct.
    directReads: readCost === "per-request" ? undefined : inner.directReads,
    get: (k) => {
      log.get++;
      return inner.get(k);
    },
    getSuffix: (k, n) => {
      log.getSuffix++;
      return inner.getSuffix(k, n);
    },
    getRange: (k, offset, length) => {
      log.getRange.push({ offset, length });
      return inner.getRange(k, offset, length);
    },
    size: (k) => inner.size(k),
    put: (k, b) => inner.put(k, b),
    putIfAbsent: (k, b) => inner.putIfAbsent(k, b),
    delete: (k) => inner.delete(k),
    list: (p) => inner.list(p),
  };
  return {
    store,
    log,
    reset() {
      log.get = 0;
      log.getSuffix = 0;
      log.getRange.length = 0;
    },
  };
}

export interface Entry {
  offset: bigint;
  nbytes: bigint;
}

function indexStart(layout: ArrayLayout, bytes: Uint8Array): number {
  return layout.indexLocation === "start" ? 0 : bytes.byteLength - shardIndexByteLength(layout);
}

/** Index entry i of the shard object `bytes`. */
export function entryOf(layout: ArrayLayout, bytes: Uint8Array, i: number): Entry {
  const view = new DataView(bytes.buffer, bytes.byteOffset + indexStart(layout, bytes));
  return { offset: view.getBigUint64(16 * i, true), nbytes: view.getBigUint64(16 * i + 8, true) };
}

/** Rewrites index entry i and re-signs the index, so only the entry's meaning is wrong. */
export async function withEntry(
  layout: ArrayLayout,
  bytes: Uint8Array,
  i: number,
  entry: Entry,
): Promise<Uint8Array> {
  const out = bytes.slice();
  const indexLen = shardIndexByteLength(layout);
  const at = indexStart(layout, out);
  const view = new DataView(out.buffer, at, indexLen);
  view.setBigUint64(16 * i, entry.offset, true);
  view.setBigUint64(16 * i + 8, entry.nbytes, true);
  view.setUint32(indexLen - 4, await crc32c(out.subarray(at, at + indexLen - 4)), true);
  return out;
}

/** wasm always; native where the addon is built (setup falls back to wasm without the C libraries). */
export async function availableBackends(): Promise<("native" | "wasm")[]> {
  const { codecBackend, setCodecBackend } = await import("@zarr-stream/codecs");
  const current = codecBackend();
  try {
    setCodecBackend("native");
    return ["native", "wasm"];
  } catch {
    return ["wasm"];
  } finally {
    setCodecBackend(current);
  }
}
