import type { Store } from "@zarr-stream/store";

/**
 * A store that delegates every call and, once `hold()` is called, stops the next write of a key that
 * `gated` accepts just before it reaches the store (`reached` resolves) until `release()`: a commit whose
 * lease check has passed and whose write (the manifest's, a page's) is on the wire.
 */
export function writeGate(inner: Store, gated: (key: string) => boolean) {
  let holding = false;
  let onReached = () => {};
  let onRelease = () => {};
  const reached = new Promise<void>((r) => {
    onReached = r;
  });
  const released = new Promise<void>((r) => {
    onRelease = r;
  });
  const gate = async <T>(key: string, write: () => Promise<T>): Promise<T> => {
    if (holding && gated(key)) {
      holding = false;
      onReached();
      await released;
    }
    return write();
  };
  const store: Store = {
    url: inner.url,
    get: (k) => inner.get(k),
    getRange: (k, o, len) => inner.getRange(k, o, len),
    getSuffix: (k, len) => inner.getSuffix(k, len),
    size: (k) => inner.size(k),
    put: (k, b) => gate(k, () => inner.put(k, b)),
    putIfAbsent: (k, b) => gate(k, () => inner.putIfAbsent(k, b)),
    delete: (k) => inner.delete(k),
    list: (p) => inner.list(p),
    getVersioned: (k) => inner.getVersioned!(k),
    version: (k) => inner.version!(k),
    putIfVersion: (k, b, v) => gate(k, () => inner.putIfVersion!(k, b, v)),
  };
  return {
    store,
    reached,
    hold() {
      holding = true;
    },
    release: () => onRelease(),
  };
}
