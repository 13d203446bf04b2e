// The files of a store directory, for the bench scripts that count, list or page in a store's bytes.
import { closeSync, openSync, readdirSync, readSync, statSync } from "node:fs";
import { join } from "node:path";

/** The paths of every file under `dir` (directories not listed). */
export function storeFiles(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath ?? e.path, e.name));
}

/**
 * Reads every file of the store once, untimed: the writer's direct writes leave nothing in the page
 * cache, and a read right after the write would otherwise come from the disk (a peer's, written through
 * the cache, from memory). Through one small buffer: a buffer per file would be the store's size in
 * garbage that the timed read after it would pay a full GC for.
 */
export function warmPageCache(dir) {
  const buf = Buffer.allocUnsafe(1 << 20);
  for (const f of storeFiles(dir)) {
    const fd = openSync(f, "r");
    try {
      while (readSync(fd, buf, 0, buf.length, null) > 0);
    } finally {
      closeSync(fd);
    }
  }
}

/** The bytes of the store's files (as bench_peers.py counts a peer's: directories not counted). */
export function storeBytes(dir) {
  return storeFiles(dir).reduce((n, f) => n + statSync(f).size, 0);
}
