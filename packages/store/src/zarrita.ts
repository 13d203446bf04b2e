import { StoreError } from "@zarr-stream/spec";
import * as check from "./arguments.js";
import type { PinnedObject, ReadableStore, ReadCost, WritableStore } from "./store.js";

/*
 * Adapters between our stores and zarrita's (zarrita.js 0.7, @zarrita/storage 0.2), in both directions.
 * zarrita's store contract is declared here structurally, so this package takes no dependency on zarrita:
 * its FileSystemStore, FetchStore, ZipFileStore or ReferenceStore fit ZarritaReadable as they are, and
 * what toZarritaStore returns is accepted wherever zarrita takes a Readable or Mutable store.
 * Why the adapters live here and how they read: packages/spec/docs/store-capabilities.md, "zarrita stores".
 */

/** zarrita's key: the store-absolute path of a node or chunk ("/zarr.json", "/t2m/c/0/0"). */
export type ZarritaPath = `/${string}`;

/** A byte range as zarrita asks for one: [offset, offset + length), or the last suffixLength bytes. */
export type ZarritaRange = { offset: number; length: number } | { suffixLength: number };

/** zarrita's per-request options; our stores heed the abort signal. */
export interface ZarritaGetOptions {
  signal?: AbortSignal;
}

/** zarrita's readable store (its AsyncReadable or SyncReadable): get, and optionally getRange. */
export interface ZarritaReadable {
  get(key: ZarritaPath, opts?: ZarritaGetOptions): Promise<Uint8Array | undefined> | Uint8Array | undefined;
  getRange?(
    key: ZarritaPath,
    range: ZarritaRange,
    opts?: ZarritaGetOptions,
  ): Promise<Uint8Array | undefined> | Uint8Array | undefined;
}

/** Our store as zarrita reads it: zarrita's AsyncReadable. */
export interface ZarritaAsyncReadable {
  get(key: ZarritaPath, opts?: ZarritaGetOptions): Promise<Uint8Array | undefined>;
  getRange(key: ZarritaPath, range: ZarritaRange, opts?: ZarritaGetOptions): Promise<Uint8Array | undefined>;
}

/** Our writable store as zarrita writes it: zarrita's AsyncMutable (zarrita.create takes one). */
export interface ZarritaAsyncMutable extends ZarritaAsyncReadable {
  set(key: ZarritaPath, value: Uint8Array): Promise<void>;
}

/** Our key for zarrita's: the path without its leading "/", then held to our key rules. */
function ourKey(path: string): string {
  if (typeof path !== "string" || !path.startsWith("/")) {
    throw new StoreError(`zarrita key ${JSON.stringify(path)} is not an absolute path`, String(path));
  }
  const key = path.slice(1);
  check.key(key);
  return key;
}

/**
 * One of our stores as a zarrita store: `zarr.open(zarr.root(toZarritaStore(store)))` reads what our
 * writer wrote, over any backend (FsStore, S3Store, MemoryStore, HttpStore), and a writable store also
 * takes zarrita's writes (`set` is an atomic `put`). zarrita's absolute keys ("/t2m/zarr.json") become
 * ours ("t2m/zarr.json"); a suffix range is our getSuffix, so a suffix longer than the object is the
 * whole object, as zarrita's sharding expects of an HTTP store.
 */
export function toZarritaStore(store: WritableStore): ZarritaAsyncMutable;
export function toZarritaStore(store: ReadableStore): ZarritaAsyncReadable;
export function toZarritaStore(store: ReadableStore): ZarritaAsyncReadable | ZarritaAsyncMutable {
  const readable: ZarritaAsyncReadable = {
    async get(path, opts) {
      opts?.signal?.throwIfAborted();
      const bytes = await store.get(ourKey(path));
      opts?.signal?.throwIfAborted();
      return bytes;
    },
    async getRange(path, range, opts) {
      opts?.signal?.throwIfAborted();
      const key = ourKey(path);
      const bytes =
        "suffixLength" in range
          ? await store.getSuffix(key, range.suffixLength)
          : await store.getRange(key, range.offset, range.length);
      opts?.signal?.throwIfAborted();
      return bytes;
    },
  };
  const writable = store as Partial<WritableStore>;
  if (typeof writable.put !== "function") return readable;
  const put = writable.put.bind(store);
  return { ...readable, set: (path, value) => put(ourKey(path), value) };
}

export interface FromZarritaOptions {
  /** The store's URL in messages; by default the zarrita store's own `url` (FetchStore) or `root` (FileSystemStore). */
  url?: string;
  /**
   * True when the store answers a range that runs past an object's end with the bytes that exist, as
   * FetchStore does over HTTP: ranges and suffixes are then zarrita range reads. False (the default): every
   * read of a key is served from one whole-object `get`, since FileSystemStore pads such a range with
   * zeros, and our shard reader asks for suffixes longer than small shards.
   */
  clampsRanges?: boolean;
  /** What a read costs (see ReadCost); by default "per-request" with clampsRanges, else "cheap". */
  readCost?: ReadCost;
}

/** The name a zarrita store goes by in our messages. */
function describe(store: ZarritaReadable): string {
  const s = store as { url?: unknown; root?: unknown };
  if (typeof s.url === "string" || s.url instanceof URL) return String(s.url);
  if (typeof s.root === "string") return s.root;
  return "zarrita store";
}

/** `bytes[offset, offset + length)`, shorter at the end, as a copy the caller may keep. */
function cut(bytes: Uint8Array, offset: number, length: number): Uint8Array {
  return bytes.slice(Math.min(offset, bytes.length), Math.min(offset + length, bytes.length));
}

/** The last n bytes of `bytes` (all of them when shorter), as a copy. */
function tail(bytes: Uint8Array, n: number): Uint8Array {
  return bytes.slice(Math.max(0, bytes.length - n));
}

/**
 * A zarrita store (FileSystemStore, FetchStore, ZipFileStore, ReferenceStore, or any object with zarrita's
 * `get`) as one of our ReadableStores, so our reader reads through it: `readRecord(fromZarritaStore(new
 * FileSystemStore(dir)), "t2m", 0)`. Keys are held to our rules before the zarrita store sees them (it
 * would resolve "../x" outside its root). zarrita stores have no size query, so `size` reads the object.
 *
 * Without `clampsRanges`, ranges are cut from whole-object reads, and `pin` reads the object once and
 * serves every read of the pin from that copy: one read per shard, all of one version of it.
 */
export function fromZarritaStore(zarrita: ZarritaReadable, options: FromZarritaOptions = {}): ReadableStore {
  const clamps = options.clampsRanges === true;
  const url = options.url ?? describe(zarrita);
  const answer = (key: string, bytes: unknown) => {
    if (bytes === undefined) return undefined;
    // A plain Uint8Array view of what may be a Buffer, whose slice() would share memory instead of copying.
    if (bytes instanceof Uint8Array) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    throw new StoreError(`${url}: zarrita store answered ${JSON.stringify(key)} with no bytes`, key);
  };
  const get = async (key: string) => answer(key, await zarrita.get(`/${key}`));
  const getRange = zarrita.getRange?.bind(zarrita);
  const ranged = async (key: string, range: ZarritaRange, orWhole: (b: Uint8Array) => Uint8Array) => {
    if (getRange === undefined) {
      const whole = await get(key);
      return whole && orWhole(whole);
    }
    return answer(key, await getRange(`/${key}`, range));
  };
  return {
    url,
    readCost: options.readCost ?? (clamps ? "per-request" : "cheap"),
    async get(key) {
      check.key(key);
      return get(key);
    },
    async getRange(key, offset, length) {
      check.range(key, offset, length);
      if (clamps) return ranged(key, { offset, length }, (b) => cut(b, offset, length));
      const whole = await get(key);
      return whole && cut(whole, offset, length);
    },
    async getSuffix(key, n) {
      check.suffix(key, n);
      if (clamps) return ranged(key, { suffixLength: n }, (b) => tail(b, n));
      const whole = await get(key);
      return whole && tail(whole, n);
    },
    async size(key) {
      check.key(key);
      return (await get(key))?.byteLength;
    },
    ...(clamps ? {} : { pin: (key: string) => pinWhole(key, get) }),
  };
}

/**
 * Reads of one version of `key` over whole-object reads: the first read that finds the object keeps it,
 * and every later read is cut from that copy, so all of them see the bytes of one version.
 */
function pinWhole(key: string, get: (key: string) => Promise<Uint8Array | undefined>): PinnedObject {
  check.key(key);
  let copy: Uint8Array | undefined;
  const read = async <T>(answer: (bytes: Uint8Array) => T): Promise<T | undefined> => {
    copy ??= await get(key);
    return copy && answer(copy);
  };
  return {
    key,
    getRange(offset, length) {
      check.range(key, offset, length);
      return read((b) => cut(b, offset, length));
    },
    getSuffix(n) {
      check.suffix(key, n);
      return read((b) => tail(b, n));
    },
    async close() {
      copy = undefined;
    },
  };
}
