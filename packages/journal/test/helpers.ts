import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const enc = (s: string) => new TextEncoder().encode(s);
export const text = (b: Uint8Array) => Buffer.from(b).toString("utf8");

export function tempDir(t: { after: (fn: () => void) => void }, label = "journal"): string {
  const dir = mkdtempSync(join(tmpdir(), `zs-${label}-`));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A fixed clock that advances one second per call, so row timestamps are distinct and predictable. */
export function clock(start = Date.parse("2026-01-01T00:00:00Z")): () => Date {
  let t = start;
  return () => {
    const d = new Date(t);
    t += 1000;
    return d;
  };
}
