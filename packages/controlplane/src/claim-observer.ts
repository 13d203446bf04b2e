import { setTimeout as sleep } from "node:timers/promises";

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
