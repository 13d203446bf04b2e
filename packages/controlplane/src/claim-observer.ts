import { stat } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import type { Store } from "@zarr-stream/store";

/**
 * The observer's own monotonic time, used to judge whether a claim's holder is still heartbeating: a
 * claim is observed stale only when its store version stayed the same for longer than its threshold on
 * this clock, so a holder's skewed wall clock cannot make a live claim look abandoned.
 */
export interface ClaimObserver {
  /** Seconds on a monotonic clock. */
  now(): number;
  sleep(seconds: number): Promise<void>;
}

export const monotonicObserver: ClaimObserver = {
  now: () => performance.now() / 1000,
  sleep: (seconds) => sleep(seconds * 1000),
};

/**
 * How long ago the store last wrote an object, by the store's own clock, when the store can say: a
 * filesystem store's file modification time (stamped by the machine that holds the file, whatever the
 * writer's clock says). Undefined for stores without such a time, which are judged by observation.
 */
export async function storeAgeS(store: Store, key: string): Promise<number | undefined> {
  if (!store.url.startsWith("file://")) return undefined;
  try {
    const info = await stat(join(fileURLToPath(store.url), key));
    return (Date.now() - info.mtimeMs) / 1000;
  } catch {
    return undefined;
  }
}
