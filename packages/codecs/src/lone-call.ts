/*
 * A decode handed to a pool of threads pays a round trip (queue, wake a thread, post the result back,
 * wake this one): on the addon's libuv pool a 1 MiB chunk costs about 100 µs of CPU more than on the
 * calling thread, where decoding it takes 150–500 µs (packages/spec/docs/codecs.md). A caller that decodes one chunk at a time gains nothing
 * from the pool, so such a lone call runs on the calling thread instead, as c-blosc's synchronous call
 * does. Calls are gathered for one microtask: a caller that starts several at once (Promise.all over a
 * shard's chunks, or a few lanes in flight) sees every one of them go to the pool, and so does a call
 * made while another is still there, so parallel callers keep every core. What this gives up: independent
 * lone calls that arrive one by one (single-chunk reads whose I/O completes at different moments) run
 * one after another here rather than side by side in the pool; the size limit keeps each to a few
 * hundred µs of this thread.
 */

/** Decoded bytes up to which a lone call runs on the calling thread: a few hundred µs at most. */
const LONE_CALL_LIMIT = 1 << 20;

interface Waiting {
  here(): unknown;
  pooled(): Promise<unknown>;
  resolve(value: unknown): void;
  reject(reason: unknown): void;
}

export class LoneCallGate {
  private waiting: Waiting[] = [];
  private inPool = 0;

  /**
   * A call decoding `bytes`: settles with `here()` when it is small enough and turns out to be the only
   * call (none other made in this turn, none in the pool); else with `pooled()`. Either way the result
   * comes as a promise, in a later microtask.
   */
  run<T>(bytes: number, here: () => T, pooled: () => Promise<T>): Promise<T> {
    if (bytes > LONE_CALL_LIMIT) return pooled();
    // With a call in the pool already, this one cannot be lone: no need to wait for the turn to end.
    if (this.inPool > 0) return this.toPool(pooled);
    return new Promise<T>((resolve, reject) => {
      this.waiting.push({ here, pooled, resolve: resolve as (v: unknown) => void, reject });
      if (this.waiting.length === 1) queueMicrotask(() => this.start());
    });
  }

  private start(): void {
    const calls = this.waiting;
    this.waiting = [];
    if (calls.length === 1 && this.inPool === 0) {
      const call = calls[0]!;
      try {
        call.resolve(call.here());
      } catch (e) {
        call.reject(e);
      }
      return;
    }
    for (const call of calls) this.toPool(call.pooled).then(call.resolve, call.reject);
  }

  /** The pooled call, counted until it settles (the count drops before its caller resumes). */
  private toPool<T>(pooled: () => Promise<T>): Promise<T> {
    this.inPool++;
    let done: Promise<T>;
    try {
      done = pooled();
    } catch (e) {
      done = Promise.reject(e);
    }
    return done.then(
      (v) => {
        this.inPool--;
        return v;
      },
      (e: unknown) => {
        this.inPool--;
        throw e;
      },
    );
  }
}
