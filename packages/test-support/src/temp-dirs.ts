import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Anything with node:test's `after`: a TestContext. */
export interface AfterHook {
  after(fn: () => void): void;
}

// node:test runs each test file in its own process, so process exit is the end of the file. An `after`
// hook cannot stand in: registered inside a `before` hook or a test, it runs as soon as that one ends.
const untilExit = new Set<string>();
process.once("exit", () => {
  for (const dir of untilExit) rmSync(dir, { recursive: true, force: true });
});

/**
 * A new directory under the OS temp dir named `zs-<label>-…`, removed when `t`'s test ends, or when the
 * test file's process exits if no `t` is given.
 */
export function tempDir(label: string, t?: AfterHook): string {
  const dir = mkdtempSync(join(tmpdir(), `zs-${label}-`));
  if (t) t.after(() => rmSync(dir, { recursive: true, force: true }));
  else untilExit.add(dir);
  return dir;
}

/** One base directory per test file, removed when the file's process exits; `fresh()` gives a new, absent path. */
export function tempRoots(label: string): { base: string; fresh: () => string } {
  const base = tempDir(label);
  let n = 0;
  return { base, fresh: () => join(base, `root-${n++}`) };
}
