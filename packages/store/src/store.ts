/**
 * The storage seam, by capability. Every store can be read (the readable core, all a browser needs); on
 * top of it a store may be writable, listable and conditional (fenced writes), and code asks for the
 * capabilities it uses: a reader takes a ReadableStore, the writer a FencingStore. Keys are relative,
 * "/"-separated ("temperature/c/0/1/0", "zarr.json"), never absolute and never containing "..".
 * Nothing here imports node: modules, so the browser entry can carry it.
 */

/**
 * What one read costs, which decides how much a reader fetches per request:
 * - "cheap": random access costs about what copying a few hundred KB costs (memory, a local disk), so a
 *   reader fetches only the bytes it needs;
 * - "per-request": every read pays a round trip before its first byte (S3, HTTP), so a reader fetches
 *   wide windows and coalesces neighbouring reads.
 */
export type ReadCost = "cheap" | "per-request";

/** The readable core: whole objects, byte ranges and sizes. */
export interface ReadableStore {
  /** A URL naming the store root (file:///abs/path, memory://name, s3://bucket/prefix, https://...). */
  readonly url: string;
  /** How reads cost; a store that does not say is taken to be "per-request" (see ReadCost). */
  readonly readCost?: ReadCost;
  /**
   * Optional: true when reads reach the bytes directly (memory, a local file system), with no server in
   * between. A reader then runs fewer reads at once and reads a large shard's bodies in pieces, one after
   * another: no request's latency needs hiding, and each read in flight holds a buffer. A server on this
   * machine is "cheap" but not direct: its answers still queue behind its own work, and a reader keeps
   * more requests in flight (packages/spec/docs/store-capabilities.md).
   */
  readonly directReads?: boolean;
  /** The whole object, or undefined when absent. */
  get(key: string): Promise<Uint8Array | undefined>;
  /** Bytes [offset, offset+length) of the object (shorter at its end), or undefined when absent. */
  getRange(key: string, offset: number, length: number): Promise<Uint8Array | undefined>;
  /** The last n bytes (all of it when shorter), or undefined when absent. */
  getSuffix(key: string, n: number): Promise<Uint8Array | undefined>;
  /**
   * Optional: getSuffix into the caller's buffer (its first bytes), resolving with how many bytes were
   * written, or undefined when absent; `into` must hold min(n, size) bytes. Lets a reader reuse its
   * buffers instead of allocating one per read (stores whose reads allocate anyway need not offer it).
   */
  getSuffixInto?(key: string, n: number, into: Uint8Array): Promise<number | undefined>;
  /**
   * Optional: getRange into the caller's buffer (its first bytes), resolving with how many bytes were
   * written, or undefined when absent; `into` must hold the bytes the range has, min(length, size - offset).
   */
  getRangeInto?(key: string, offset: number, length: number, into: Uint8Array): Promise<number | undefined>;
  /** Object size in bytes, or undefined when absent. */
  size(key: string): Promise<number | undefined>;
  /**
   * Optional: reads of one version of `key` (see PinnedObject), for a reader that takes an object's
   * index and bodies in separate reads while a writer may replace it whole. Makes no request itself.
   * A store without it is not snapshot-consistent: two reads of one key may see two versions.
   */
  pin?(key: string): PinnedObject;
}

/**
 * Reads of one version of one object, from ReadableStore.pin. The first read that finds the object pins
 * the version it read; every later read returns bytes of that version or throws ObjectChanged (from
 * @zarr-stream/spec) when the object was replaced or deleted since, never bytes of another version.
 * Reads answer as the store's own methods of the same names do (undefined: absent, before anything was
 * pinned). Later reads may run at once; the first must settle before them. A pin is the capability's
 * whole interface because it costs no request of its own on any backend: FsStore keeps the file the first
 * read opened (a rename over the key leaves the open inode intact), S3Store and HTTP stores send the
 * first response's ETag as If-Match with the requests that are made anyway (412: changed), MemoryStore
 * compares its version.
 */
export interface PinnedObject {
  readonly key: string;
  getRange(offset: number, length: number): Promise<Uint8Array | undefined>;
  getSuffix(n: number): Promise<Uint8Array | undefined>;
  /** As ReadableStore.getRangeInto; offered where the store's own is. */
  getRangeInto?(offset: number, length: number, into: Uint8Array): Promise<number | undefined>;
  /** As ReadableStore.getSuffixInto; offered where the store's own is. */
  getSuffixInto?(n: number, into: Uint8Array): Promise<number | undefined>;
  /** Releases what the pin holds (FsStore: the open file) once every read through it has settled. */
  close(): Promise<void>;
}

/** Writes: the atomic put, create-only put and delete the contract needs. */
export interface WritableStore extends ReadableStore {
  /**
   * Atomic replace: a concurrent reader sees the old object or the new one, never a part. The store keeps
   * no reference to `bytes` once the promise settles, so the caller may reuse the buffer then.
   */
  put(key: string, bytes: Uint8Array): Promise<void>;
  /** Create-only: writes and returns true when absent, returns false (writing nothing) when present. */
  putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean>;
  /** Removes the object; absent is not an error. */
  delete(key: string): Promise<void>;
  /**
   * Optional, for stores that stage writes in files of their own (FsStore): keep those files, and lock
   * files, out of the directories under `prefix` (ending in "/"), for directories a peer program lists
   * and reads name by name. Applies to every later write; setting a prefix again changes nothing.
   */
  stageApart?(prefix: string): void;
}

/**
 * Optional: writes an object from a stream, for objects that are composed rather than held (a journal's
 * compaction of hundreds of MB): memory stays at what the store buffers per request, whatever the size.
 */
export interface StreamingWritableStore extends WritableStore {
  /**
   * Writes `key` from `chunks`, pulled one at a time; each chunk may be reused by the source once the next
   * one is asked for. Atomic as `put`: a reader sees the old object or the whole new one, and a source
   * that throws leaves nothing behind and rejects with its own error. With `ifAbsent`, create-only as
   * `putIfAbsent`: resolves false, writing nothing, when the key exists (the source may then be left
   * unread or partly read). Resolves true once the object is written.
   */
  putStream(
    key: string,
    chunks: AsyncIterable<Uint8Array>,
    options?: { ifAbsent?: boolean },
  ): Promise<boolean>;
}

/** Listing by key prefix. */
export interface ListableStore extends ReadableStore {
  /** Every key that starts with prefix ("" lists all), sorted by code unit. */
  list(prefix: string): Promise<string[]>;
}

/** Conditional writes: compare-and-swap on an opaque per-object version, what fencing is built on. */
export interface ConditionalStore extends ReadableStore {
  /** The object with an opaque version tag (S3: ETag), read atomically together, or undefined when absent. */
  getVersioned(key: string): Promise<{ bytes: Uint8Array; version: string } | undefined>;
  /** The object's current version tag without its bytes (S3: HEAD), or undefined when absent. */
  version(key: string): Promise<string | undefined>;
  /**
   * Atomic compare-and-swap: writes only when the current version equals `expected` (null = must be
   * absent). Returns the new version, or undefined when the precondition failed (S3: If-Match /
   * If-None-Match → 412). Exclusive only against other putIfVersion calls on the key: every writer of a
   * key guarded this way must use putIfVersion, never put. A version is never handed out twice for one
   * key while the object exists, so an unchanged version means an unchanged object.
   */
  putIfVersion(key: string, bytes: Uint8Array, expected: string | null): Promise<string | undefined>;
}

/**
 * A store the writer and the control plane can work with: readable, writable, listable, and possibly
 * conditional (every backend of this package is; `canFence` tells).
 */
export interface Store
  extends WritableStore,
    ListableStore,
    Partial<Pick<ConditionalStore, "getVersioned" | "version" | "putIfVersion">>,
    Partial<Pick<StreamingWritableStore, "putStream">> {}

/** A store whose writes can be fenced: every backend of this package is one. */
export type FencingStore = Store & ConditionalStore;

/**
 * What openStore gives: a store with every capability, and `close()` to release what it holds open (an
 * S3Store's sockets, which would otherwise keep the process alive). A closed store opens them again on
 * its next call, so closing early is never wrong.
 */
export type OpenedStore = FencingStore & { close(): Promise<void> };

export function canWrite<S extends ReadableStore>(store: S): store is S & WritableStore {
  const s = store as Partial<WritableStore>;
  return typeof s.put === "function" && typeof s.putIfAbsent === "function" && typeof s.delete === "function";
}

export function canPutStream<S extends ReadableStore>(store: S): store is S & StreamingWritableStore {
  return canWrite(store) && typeof (store as Partial<StreamingWritableStore>).putStream === "function";
}

export function canList<S extends ReadableStore>(store: S): store is S & ListableStore {
  return typeof (store as Partial<ListableStore>).list === "function";
}

export function canFence<S extends ReadableStore>(store: S): store is S & ConditionalStore {
  const s = store as Partial<ConditionalStore>;
  return (
    typeof s.getVersioned === "function" &&
    typeof s.version === "function" &&
    typeof s.putIfVersion === "function"
  );
}
