/**
 * The storage seam every package talks to. Kept as small as zarrita's store contract plus the writes the
 * contract needs: atomic put, create-only put, delete and list. Keys are relative, "/"-separated
 * ("temperature/c/0/1/0", "zarr.json"), never absolute and never containing "..".
 */
export interface Store {
  /** A URL naming the store root (file:///abs/path, memory://name, s3://bucket/prefix). */
  readonly url: string;
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
  /** Object size in bytes, or undefined when absent. */
  size(key: string): Promise<number | undefined>;
  /**
   * Atomic replace: a concurrent reader sees the old object or the new one, never a part. The store keeps
   * no reference to `bytes` once the promise settles, so the caller may reuse the buffer then.
   */
  put(key: string, bytes: Uint8Array): Promise<void>;
  /** Create-only: writes and returns true when absent, returns false (writing nothing) when present. */
  putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean>;
  /** Removes the object; absent is not an error. */
  delete(key: string): Promise<void>;
  /** Every key that starts with prefix ("" lists all), sorted by code unit. */
  list(prefix: string): Promise<string[]>;
  /** The object with an opaque version tag (S3: ETag), read atomically together, or undefined when absent. */
  getVersioned?(key: string): Promise<{ bytes: Uint8Array; version: string } | undefined>;
  /** The object's current version tag without its bytes (S3: HEAD), or undefined when absent. */
  version?(key: string): Promise<string | undefined>;
  /**
   * Atomic compare-and-swap: writes only when the current version equals `expected` (null = must be
   * absent). Returns the new version, or undefined when the precondition failed (S3: If-Match /
   * If-None-Match → 412). Exclusive only against other putIfVersion calls on the key: every writer of a
   * key guarded this way must use putIfVersion, never put. A version is never handed out twice for one
   * key while the object exists, so an unchanged version means an unchanged object.
   */
  putIfVersion?(key: string, bytes: Uint8Array, expected: string | null): Promise<string | undefined>;
}

/** A store whose writes can be fenced: every backend of this package is one. */
export type FencingStore = Store & Required<Pick<Store, "getVersioned" | "version" | "putIfVersion">>;

export function canFence(store: Store): store is FencingStore {
  return (
    typeof store.getVersioned === "function" &&
    typeof store.version === "function" &&
    typeof store.putIfVersion === "function"
  );
}
