import { StoreError } from "@zarr-stream/spec";
import type { ConditionalStore, ReadableStore } from "@zarr-stream/store";

/**
 * Parsed metadata documents (the manifest, each array's zarr.json), held per store handle and revalidated
 * on every use by the store's version tag: a stat on FsStore (inode, size, mtime), a HEAD on S3Store
 * (ETag), a counter on MemoryStore. A version is never handed out twice for one key while the object
 * exists, so an unchanged version means unchanged bytes and the parsed value still holds; a changed one
 * (a new commit, a grown array) is read and parsed again. A store without versions (an HTTP store) is read
 * and parsed every time.
 */
type VersionedStore = ReadableStore & Pick<ConditionalStore, "version" | "getVersioned">;

interface Held {
  version: string;
  value: unknown;
}

/** Weakly keyed: a store handle nobody holds any more takes its documents with it. */
const byStore = new WeakMap<ReadableStore, Map<string, Held>>();

function isVersioned(store: ReadableStore): store is VersionedStore {
  const s = store as Partial<VersionedStore>;
  return typeof s.version === "function" && typeof s.getVersioned === "function";
}

/**
 * The document at `key` as `parse` makes it, or undefined when the object is absent. `kind` names the
 * parse, so one key read two ways (zarr.json as a layout and as an opened array) holds both. The value is
 * shared by every caller of this store handle: callers must not change it. A parse that throws caches
 * nothing.
 */
export function cachedDocument<T>(
  store: ReadableStore,
  key: string,
  kind: string,
  parse: (bytes: Uint8Array) => T | Promise<T>,
): Promise<T | undefined> {
  if (!isReadableStore(store)) return Promise.reject(notReadable(store));
  let turn = sameTurn.get(store);
  if (turn === undefined) {
    turn = new Map();
    sameTurn.set(store, turn);
  }
  const id = `${kind}\0${key}`;
  const shared = turn.get(id);
  if (shared !== undefined) return shared as Promise<T | undefined>;
  const loading = loadDocument(store, key, id, parse);
  turn.set(id, loading);
  const calls = turn;
  queueMicrotask(() => {
    if (calls.get(id) === loading) calls.delete(id);
  });
  return loading;
}

function isReadableStore(store: ReadableStore): boolean {
  const s = store as Partial<ReadableStore> | null;
  return (
    typeof s === "object" && s !== null && typeof s.getSuffix === "function" && typeof s.url === "string"
  );
}

/**
 * Every read starts with a metadata document, so a store of another library is refused here by name: a
 * zarrita store has `get` too, and would otherwise read every key one character short ("utput_manifest.json").
 */
function notReadable(store: unknown): StoreError {
  const zarrita = typeof (store as { get?: unknown } | null)?.get === "function";
  return new StoreError(
    zarrita
      ? "this store is not a ReadableStore of @zarr-stream/store (no getSuffix or url): a zarrita store reads through fromZarritaStore(store) from @zarr-stream/store"
      : `${String(store)} is not a ReadableStore of @zarr-stream/store`,
  );
}

/**
 * Loads started in this synchronous turn, shared by the calls made in the same turn (the variables of
 * one `Promise.all` over readRecord each read the manifest): no store write can complete within a
 * synchronous turn, so a load started earlier in it sees everything a later call could have observed.
 * The entry is dropped at the turn's first microtask checkpoint; a call after that loads afresh.
 */
const sameTurn = new WeakMap<ReadableStore, Map<string, Promise<unknown>>>();

async function loadDocument<T>(
  store: ReadableStore,
  key: string,
  id: string,
  parse: (bytes: Uint8Array) => T | Promise<T>,
): Promise<T | undefined> {
  if (!isVersioned(store)) {
    const bytes = await store.get(key);
    return bytes === undefined ? undefined : parse(bytes);
  }
  let held = byStore.get(store);
  if (held === undefined) {
    held = new Map();
    byStore.set(store, held);
  }
  const before = held.get(id);
  if (before !== undefined) {
    const now = await store.version(key);
    if (now === before.version) return before.value as T;
    if (now === undefined) {
      held.delete(id);
      return undefined;
    }
  }
  const got = await store.getVersioned(key);
  if (got === undefined) {
    held.delete(id);
    return undefined;
  }
  const value = await parse(got.bytes);
  held.set(id, { version: got.version, value });
  return value;
}

/** Freezes a parsed JSON document throughout, so a caller that changes a shared value fails loudly. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
