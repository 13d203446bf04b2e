import { type AfterHook, tempDir as tempDirOf } from "@zarr-stream/test-support/temp-dirs";

export const enc = (s: string) => new TextEncoder().encode(s);
export const text = (b: Uint8Array) => Buffer.from(b).toString("utf8");

export function tempDir(t: AfterHook, label = "journal"): string {
  return tempDirOf(label, t);
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
