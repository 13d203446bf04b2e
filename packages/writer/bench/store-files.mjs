// The files of a store directory, for the bench scripts that count, list or page in a store's bytes.
import { readdirSync, readFileSync, statSync } from "node:fs";
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
 * the cache, from memory).
 */
export function warmPageCache(dir) {
  for (const f of storeFiles(dir)) readFileSync(f);
}

/** The bytes of the store's files (as bench_peers.py counts a peer's: directories not counted). */
export function storeBytes(dir) {
  return storeFiles(dir).reduce((n, f) => n + statSync(f).size, 0);
}
