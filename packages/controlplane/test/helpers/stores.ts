// Test helpers around the real stores of @zarr-stream/store.
import { MemoryStore } from "@zarr-stream/store";

/**
 * A MemoryStore whose contents tests can read and plant synchronously. MemoryStore applies writes
 * synchronously inside its async methods, so the shadow map mirrors it exactly.
 */
export class TextMemoryStore extends MemoryStore {
  readonly #shadow = new Map<string, Uint8Array>();
  override async put(key: string, bytes: Uint8Array): Promise<void> {
    await super.put(key, bytes);
    this.#shadow.set(key, bytes.slice());
  }
  override async putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean> {
    const created = await super.putIfAbsent(key, bytes);
    if (created) this.#shadow.set(key, bytes.slice());
    return created;
  }
  override async putIfVersion(key: string, bytes: Uint8Array, expected: string | null) {
    const version = await super.putIfVersion(key, bytes, expected);
    if (version !== undefined) this.#shadow.set(key, bytes.slice());
    return version;
  }
  override async delete(key: string): Promise<void> {
    await super.delete(key);
    this.#shadow.delete(key);
  }
  text(key: string): string | undefined {
    const v = this.#shadow.get(key);
    return v === undefined ? undefined : new TextDecoder().decode(v);
  }
  /** Plants a document as another (possibly foreign or broken) writer would leave it. */
  setText(key: string, text: string): void {
    const bytes = new TextEncoder().encode(text);
    void super.put(key, bytes);
    this.#shadow.set(key, bytes);
  }
}

/** An observer whose waits move a manual clock, so claim observation windows pass instantly in tests. */
export function manualObserver(clock: ReturnType<typeof manualClock>) {
  return {
    now: clock,
    sleep: async (s: number) => {
      clock.advance(s);
    },
  };
}

/** A clock the test moves by hand. */
export function manualClock(start = 1724000000) {
  let t = start;
  const clock = () => t;
  clock.set = (v: number) => {
    t = v;
  };
  clock.advance = (d: number) => {
    t += d;
  };
  return clock;
}
