import { StoreError } from "@zarr-stream/spec";
import type { FencingStore } from "@zarr-stream/store";

/** What happens to the faulted call: it fails before reaching the store, or it is carried out and then fails. */
export type FaultKind = "fail" | "lose-ack";

export interface FaultPlan {
  /** 1-based number of the store call that faults (reads and writes alike); 0 faults nothing. */
  at: number;
  kind: FaultKind;
  /** Seeded 0..1 source: each call first yields 0-3 turns of the event loop, so concurrent calls reorder. */
  random?: () => number;
  /** Instead of `at`: the first call this accepts faults, and the plan is then spent. */
  match?: (what: string, key: string) => boolean;
}

/** The error an injected fault throws, so a test can tell it from a real one. */
export class InjectedFault extends StoreError {
  override name = "InjectedFault";
}

/**
 * A store wrapper that fails exactly one call: before it reaches the store ("fail": nothing happened), or
 * after the store carried it out ("lose-ack": it happened, the caller hears it did not). `calls` counts
 * every call, so a run without faults tells how many fault points a workload has.
 */
export class FaultStore implements FencingStore {
  calls = 0;
  /** Whether the planned fault was injected (a writer may heal it without its caller hearing of it). */
  fired = false;
  /** Every call made, in order: what it was and on which key. */
  readonly log: { what: string; key: string }[] = [];
  readonly url: string;

  constructor(
    readonly inner: FencingStore,
    public plan: FaultPlan = { at: 0, kind: "fail" },
  ) {
    this.url = inner.url;
  }

  async #call<T>(what: string, key: string, run: () => Promise<T>): Promise<T> {
    const n = ++this.calls;
    this.log.push({ what, key });
    const random = this.plan.random;
    if (random !== undefined) {
      for (let turns = Math.floor(random() * 4); turns > 0; turns--)
        await new Promise((resolve) => setImmediate(resolve));
    }
    const { match } = this.plan;
    if (match === undefined ? n !== this.plan.at : !match(what, key)) return run();
    if (match !== undefined) this.plan = { at: 0, kind: this.plan.kind };
    this.fired = true;
    if (this.plan.kind === "fail")
      throw new InjectedFault(`injected failure of call ${n} (${what} ${key})`, key);
    await run();
    throw new InjectedFault(`injected lost acknowledgement of call ${n} (${what} ${key})`, key);
  }

  get(key: string) {
    return this.#call("get", key, () => this.inner.get(key));
  }
  getRange(key: string, offset: number, length: number) {
    return this.#call("getRange", key, () => this.inner.getRange(key, offset, length));
  }
  getSuffix(key: string, n: number) {
    return this.#call("getSuffix", key, () => this.inner.getSuffix(key, n));
  }
  size(key: string) {
    return this.#call("size", key, () => this.inner.size(key));
  }
  put(key: string, bytes: Uint8Array) {
    return this.#call("put", key, () => this.inner.put(key, bytes));
  }
  putIfAbsent(key: string, bytes: Uint8Array) {
    return this.#call("putIfAbsent", key, () => this.inner.putIfAbsent(key, bytes));
  }
  delete(key: string) {
    return this.#call("delete", key, () => this.inner.delete(key));
  }
  list(prefix: string) {
    return this.#call("list", prefix, () => this.inner.list(prefix));
  }
  getVersioned(key: string) {
    return this.#call("getVersioned", key, () => this.inner.getVersioned(key));
  }
  version(key: string) {
    return this.#call("version", key, () => this.inner.version(key));
  }
  putIfVersion(key: string, bytes: Uint8Array, expected: string | null) {
    return this.#call("putIfVersion", key, () => this.inner.putIfVersion(key, bytes, expected));
  }
}
