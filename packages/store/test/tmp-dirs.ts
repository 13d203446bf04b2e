import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after } from "node:test";

/** One base directory per test file, removed when the file's tests end; `fresh()` gives a new, absent path. */
export function tempRoots(label: string): { base: string; fresh: () => string } {
  const base = mkdtempSync(join(tmpdir(), `zs-store-${label}-`));
  after(() => rmSync(base, { recursive: true, force: true }));
  let n = 0;
  return { base, fresh: () => join(base, `root-${n++}`) };
}

/** What `make` builds while ZSTREAM_NATIVE_FS=0: an FsStore (or its parts) using node:fs alone. */
export function nodeFsOnly<T>(make: () => T): T {
  const before = process.env.ZSTREAM_NATIVE_FS;
  process.env.ZSTREAM_NATIVE_FS = "0";
  try {
    return make();
  } finally {
    if (before === undefined) delete process.env.ZSTREAM_NATIVE_FS;
    else process.env.ZSTREAM_NATIVE_FS = before;
  }
}
