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
