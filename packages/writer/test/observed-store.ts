import type { Store } from "@zarr-stream/store";

/** A store that reports every read and every write it is asked for, then delegates. */
export function observedStore(
  inner: Store,
  on: { read?: (key: string) => void; write?: (key: string) => void },
): Store {
  const read = (k: string) => {
    on.read?.(k);
  };
  const write = (k: string) => {
    on.write?.(k);
  };
  return {
    url: inner.url,
    get: (k) => {
      read(k);
      return inner.get(k);
    },
    getRange: (k, o, n) => {
      read(k);
      return inner.getRange(k, o, n);
    },
    getSuffix: (k, n) => {
      read(k);
      return inner.getSuffix(k, n);
    },
    size: (k) => inner.size(k),
    put: (k, b) => {
      write(k);
      return inner.put(k, b);
    },
    putIfAbsent: (k, b) => {
      write(k);
      return inner.putIfAbsent(k, b);
    },
    delete: (k) => {
      write(k);
      return inner.delete(k);
    },
    list: (p) => inner.list(p),
    getVersioned: (k) => {
      read(k);
      return inner.getVersioned!(k);
    },
    version: (k) => inner.version!(k),
    putIfVersion: (k, b, v) => {
      write(k);
      return inner.putIfVersion!(k, b, v);
    },
  };
}
