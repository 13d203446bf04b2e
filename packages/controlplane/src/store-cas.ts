import { ProtocolError } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";

export type Versioned = { bytes: Uint8Array; version: string };

/** Whether two objects' bytes are equal: how a writer knows a write it cannot confirm as its own. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.from(a.buffer, a.byteOffset, a.length).equals(b);
}

/** The store's conditional reads and writes; documents that are fenced or repaired need them. */
export function cas(store: Store) {
  const { getVersioned, putIfVersion } = store;
  if (!getVersioned || !putIfVersion) {
    throw new ProtocolError(`store ${store.url} has no conditional writes (getVersioned/putIfVersion)`);
  }
  return {
    get: (key: string): Promise<Versioned | undefined> => getVersioned.call(store, key),
    put: (key: string, bytes: Uint8Array, expected: string | null): Promise<string | undefined> =>
      putIfVersion.call(store, key, bytes, expected),
  };
}
