import {
  type ArrayLayout,
  allocTypedUnfilled,
  matchesDType,
  openZarrArray,
  parseArrayZarrJson,
  type ReadScratch,
  type ReusableBuffer,
  readShardInto,
  settleLanes,
  shardKey,
  wholeShardWindow,
  type ZarrArray,
  zeroBox,
} from "@zarr-stream/shard";
import type { DType, TypedArray } from "@zarr-stream/spec";
import { SchemaError } from "@zarr-stream/spec";
import type { ReadableStore } from "@zarr-stream/store";
import { readChunkedRegion } from "./chunk-region.js";
import { parseJsonObject } from "./manifest.js";
import { cachedDocument, deepFreeze } from "./metadata-cache.js";

function zarrJsonKey(arrayPath: string): string {
  return arrayPath === "" ? "zarr.json" : `${arrayPath}/zarr.json`;
}

/** `<arrayPath>/zarr.json` parsed by `parse`, once per store handle and version (metadata-cache.ts). */
async function cachedZarrJson<T>(
  store: ReadableStore,
  arrayPath: string,
  kind: string,
  parse: (doc: unknown, key: string) => T,
): Promise<T> {
  const key = zarrJsonKey(arrayPath);
  const got = await cachedDocument(store, key, kind, (bytes) => parse(parseJsonObject(bytes, key), key));
  if (got === undefined) throw new SchemaError(`array ${arrayPath}: ${key} is missing`, "", key);
  return got;
}

/**
 * Reads and validates `<arrayPath>/zarr.json` of an array in zarr-stream's own layout (sharding_indexed
 * over Blosc-zstd or zstd); any other array is a SchemaError naming the field. openArray takes any array.
 * The layout is frozen and shared by the reads of this store handle until zarr.json changes.
 */
export async function readArrayLayout(store: ReadableStore, arrayPath: string): Promise<ArrayLayout> {
  return cachedZarrJson(store, arrayPath, "layout", (doc, key) => deepFreeze(parseArrayZarrJson(doc, key)));
}

/**
 * Opens `<arrayPath>/zarr.json` of any Zarr v3 array whose codecs we have (openZarrArray of
 * @zarr-stream/shard): a codec we lack is UnsupportedCodec naming it, before any chunk is read. The opened
 * array is shared by the reads of this store handle until zarr.json changes.
 */
export async function openArray(store: ReadableStore, arrayPath: string): Promise<ZarrArray> {
  return cachedZarrJson(store, arrayPath, "array", openZarrArray);
}

/** Options of readArrayRegion. */
export interface RegionOptions {
  /**
   * The caller's buffer for the box: a typed array of the array's dtype holding exactly the box's element
   * count, C order. Every element is written (decoded or fill), so a loop reusing one `out` allocates no
   * result buffer per read. Checked before any I/O (SchemaError at /out).
   */
  out?: TypedArray;
}

/** How many shard reads run at once through a server: enough to hide its round trips. */
const READ_CONCURRENCY = 8;

/**
 * On a store with direct reads (ReadableStore.directReads: memory, a local disk) the shard reads in flight
 * hold at most this many bytes of windows, in 4 to 8 lanes: no round trip needs hiding there, and each
 * reading worker keeps its window and piece buffers, which V8 counts as external memory, so 8 workers
 * with 2-4 MiB windows brought full GCs into a process's first reads. On 2 cores, shards of 2 MiB and
 * more read with less CPU in 4 lanes than in 8, and shards of 0.5 MiB (time shards of one record) 1.4x
 * faster in 8 than in 4. Through versitygw on loopback 8 lanes read 1.17x TensorStore's speed and 4
 * lanes 1.05x, so a server, even on this machine, keeps 8 (packages/writer/bench/README.md).
 */
const DIRECT_READ_BYTES = 8 * 2 ** 20;

/** The lanes of a region read of `layout` on `store` (see DIRECT_READ_BYTES). */
function readLanes(store: ReadableStore, layout: ArrayLayout): number {
  if (store.directReads !== true) return READ_CONCURRENCY;
  return Math.min(READ_CONCURRENCY, Math.max(4, Math.floor(DIRECT_READ_BYTES / wholeShardWindow(layout))));
}

/**
 * Buffers kept between shard reads and lent to each reading worker, one pool per use (first-read windows;
 * bodies past them) so that a worker gets a buffer of the size that use needs: a fresh buffer per shard
 * read costs page faults and full GCs from external-memory pressure (measured in
 * packages/spec/docs/history.md). Each pool keeps up to KEEP_BYTES: the 8 workers of one remote read
 * (4 MiB windows), or the workers of many local reads running at once.
 */
const KEEP_BYTES = 32 * 2 ** 20;

class KeptBuffers {
  /** Smallest first: a lender gets the largest, and the smallest go when the pool is full. */
  #kept: Uint8Array[] = [];
  #bytes = 0;

  /** A kept buffer, grown on demand (not zero-filled: every byte handed out is read first). */
  lend(): ReusableBuffer & { release(): void } {
    let buf = this.#kept.pop();
    if (buf !== undefined) this.#bytes -= buf.length;
    return {
      take: (n: number) => {
        if (buf === undefined || buf.length < n) buf = new Uint8Array(Buffer.allocUnsafeSlow(n).buffer, 0, n);
        return buf;
      },
      release: () => {
        const done = buf;
        if (done === undefined || done.length > KEEP_BYTES) return;
        const at = this.#kept.findIndex((k) => k.length > done.length);
        this.#kept.splice(at < 0 ? this.#kept.length : at, 0, done);
        this.#bytes += done.length;
        while (this.#bytes > KEEP_BYTES) this.#bytes -= this.#kept.shift()!.length;
      },
    };
  }
}

const windowBuffers = new KeptBuffers();
const bodyBuffers = new KeptBuffers();

/**
 * Reads the box `sel` (per dim [start, stop) in array coordinates) of an array into a C-order buffer of the
 * box's shape. An array in our own layout (an ArrayLayout, or an opened array that has one) takes the fast
 * path: each shard the box touches costs one read when it fits that read's window (see readShardInto of
 * @zarr-stream/shard), else one more per run of nearby bodies the box needs; only the inner chunks the box
 * needs are decoded, each copied once into the result. Any other opened array is read through its codec
 * pipeline (chunk-region.ts). A missing shard or chunk object reads as fill.
 */
export async function readArrayRegion(
  store: ReadableStore,
  arrayPath: string,
  array: ArrayLayout | ZarrArray,
  sel: [number, number][],
  opts: RegionOptions = {},
): Promise<TypedArray> {
  const layout = "pipeline" in array ? array.layout : array;
  checkSelection(arrayPath, array.shape, sel);
  const n = sel.reduce((p, [a, b]) => p * (b - a), 1);
  const out = opts.out ?? allocTypedUnfilled(array.dtype, n);
  if (opts.out !== undefined) checkOut(arrayPath, array.dtype, n, opts.out);
  if (layout === undefined) return readChunkedRegion(store, arrayPath, array as ZarrArray, sel, out);
  return readLayoutRegion(store, arrayPath, layout, sel, out);
}

/** The caller's `out` must be exactly the box: a shorter one cannot hold it, a longer one is a mistake. */
export function checkOut(what: string, dtype: DType, n: number, out: TypedArray): void {
  if (!(ArrayBuffer.isView(out) && matchesDType(out, dtype) && out.length === n)) {
    const got = ArrayBuffer.isView(out) ? `${out.constructor.name}(${out.length})` : typeof out;
    throw new SchemaError(
      `${what}: out must be a ${dtype} typed array of ${n} elements (the box read), got ${got}`,
      "/out",
      what,
    );
  }
}

function checkSelection(arrayPath: string, shape: readonly number[], sel: [number, number][]): void {
  if (sel.length !== shape.length) {
    throw new SchemaError(`array ${arrayPath}: selection has rank ${sel.length}, array has ${shape.length}`);
  }
  sel.forEach(([a, b], d) => {
    if (!(Number.isInteger(a) && Number.isInteger(b) && 0 <= a && a <= b && b <= shape[d]!)) {
      throw new SchemaError(
        `array ${arrayPath}: selection [${a}, ${b}) outside dim ${d} of length ${shape[d]}`,
      );
    }
  });
}

async function readLayoutRegion(
  store: ReadableStore,
  arrayPath: string,
  layout: ArrayLayout,
  sel: [number, number][],
  out: TypedArray,
): Promise<TypedArray> {
  const outShape = sel.map(([a, b]) => b - a);
  // `out` is not zero-filled: every element is either decoded or zeroed as fill (absent chunk or shard).
  if (outShape.some((n) => n === 0)) return out;
  const ranges = sel.map(([a, b], d) => {
    const s = layout.shardShape[d]!;
    return [Math.floor(a / s), Math.ceil(b / s)] as const;
  });
  const shardIndices: number[][] = [];
  const walk = (d: number, prefix: number[]) => {
    if (d === ranges.length) return void shardIndices.push(prefix);
    for (let i = ranges[d]![0]; i < ranges[d]![1]; i++) walk(d + 1, [...prefix, i]);
  };
  walk(0, []);
  let next = 0;
  const worker = async (stopped: () => boolean) => {
    const scratch = { window: windowBuffers.lend(), bodies: bodyBuffers.lend() };
    try {
      await readShards(scratch, stopped);
    } finally {
      scratch.window.release();
      scratch.bodies.release();
    }
  };
  const readShards = async (scratch: ReadScratch, stopped: () => boolean) => {
    while (!stopped() && next < shardIndices.length) {
      const idx = shardIndices[next++]!;
      const inter = idx.map((i, d) => {
        const s = layout.shardShape[d]!;
        return [Math.max(sel[d]![0], i * s), Math.min(sel[d]![1], (i + 1) * s)] as [number, number];
      });
      const start = inter.map(([a], d) => a - sel[d]![0]);
      const target = { data: out, shape: outShape, start, zeroed: false };
      const found = await readShardInto(store, shardKey(arrayPath, idx), layout, idx, inter, target, scratch);
      if (!found)
        zeroBox(
          layout,
          out,
          outShape,
          start,
          inter.map(([a, b]) => b - a),
        );
    }
  };
  const lanes = readLanes(store, layout);
  await settleLanes(Math.min(lanes, shardIndices.length), worker);
  return out;
}
