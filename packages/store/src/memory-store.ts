import { randomUUID } from "node:crypto";
import * as check from "./arguments.js";
import type { PinnedObject, ReadCost, Store } from "./store.js";
import { type PinnedAnswer, VersionPin } from "./version-pin.js";

/**
 * A Store held in a Map, for tests and in-process pipelines. Bytes are copied on the way in and out, so
 * no caller can change a stored object except through put. Accepts and refuses the same keys as FsStore.
 * `new MemoryStore()` is private to its holder; `openStore("memory://<name>")` shares one per name.
 */
export class MemoryStore implements Store {
  readonly url: string;
  readonly readCost: ReadCost = "cheap";
  readonly directReads = true;
  readonly #objects = new Map<string, Uint8Array>();
  /** Version of each present object: a store-wide write counter, so a rewrite never reuses a version. */
  readonly #versions = new Map<string, string>();
  #writes = 0;

  constructor(name: string = randomUUID()) {
    this.url = `memory://${name}`;
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    check.key(key);
    return this.#objects.get(key)?.slice();
  }

  async getRange(key: string, offset: number, length: number): Promise<Uint8Array | undefined> {
    check.range(key, offset, length);
    return this.#objects.get(key)?.slice(offset, offset + length);
  }

  async getSuffix(key: string, n: number): Promise<Uint8Array | undefined> {
    check.suffix(key, n);
    const bytes = this.#objects.get(key);
    return bytes?.slice(Math.max(0, bytes.length - n));
  }

  /** Reads of one version: each read compares the object's version with the pinned one. */
  pin(key: string): PinnedObject {
    check.key(key);
    const pin = new VersionPin(key, `MemoryStore ${this.url}`);
    const answer = (ifMatch: string | undefined, cut: (bytes: Uint8Array) => Uint8Array) => {
      const bytes = this.#objects.get(key);
      const version = this.#versions.get(key);
      const got: PinnedAnswer<Uint8Array> =
        bytes === undefined
          ? "absent"
          : ifMatch !== undefined && version !== ifMatch
            ? "changed"
            : { value: cut(bytes), version };
      return Promise.resolve(got);
    };
    return {
      key,
      getRange: (offset, length) => {
        check.range(key, offset, length);
        return pin.read("getRange", (ifMatch) => answer(ifMatch, (b) => b.slice(offset, offset + length)));
      },
      getSuffix: (n) => {
        check.suffix(key, n);
        return pin.read("getSuffix", (ifMatch) => answer(ifMatch, (b) => b.slice(Math.max(0, b.length - n))));
      },
      close: () => Promise.resolve(),
    };
  }

  async size(key: string): Promise<number | undefined> {
    check.key(key);
    return this.#objects.get(key)?.length;
  }

  async put(key: string, bytes: Uint8Array): Promise<void> {
    check.write(key, bytes);
    this.#set(key, bytes);
  }

  async putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean> {
    check.write(key, bytes);
    if (this.#objects.has(key)) return false;
    this.#set(key, bytes);
    return true;
  }

  /** Holds the whole object, as every MemoryStore object is held; the key is checked again at the end. */
  async putStream(
    key: string,
    chunks: AsyncIterable<Uint8Array>,
    options: { ifAbsent?: boolean } = {},
  ): Promise<boolean> {
    check.stream(key, chunks);
    if (options.ifAbsent && this.#objects.has(key)) return false;
    const parts: Uint8Array[] = [];
    // A copy (a Buffer's slice would be a view): the source may refill the chunk it lent.
    for await (const chunk of chunks) parts.push(new Uint8Array(chunk));
    if (options.ifAbsent && this.#objects.has(key)) return false;
    const whole = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      whole.set(p, at);
      at += p.length;
    }
    this.#set(key, whole);
    return true;
  }

  async delete(key: string): Promise<void> {
    check.key(key);
    this.#objects.delete(key);
    this.#versions.delete(key);
  }

  async getVersioned(key: string): Promise<{ bytes: Uint8Array; version: string } | undefined> {
    check.key(key);
    const bytes = this.#objects.get(key);
    return bytes === undefined ? undefined : { bytes: bytes.slice(), version: this.#versions.get(key)! };
  }

  async version(key: string): Promise<string | undefined> {
    check.key(key);
    return this.#versions.get(key);
  }

  /** Atomic because nothing awaits between the check and the write. */
  async putIfVersion(key: string, bytes: Uint8Array, expected: string | null): Promise<string | undefined> {
    check.conditionalWrite(key, bytes, expected);
    if ((this.#versions.get(key) ?? null) !== expected) return undefined;
    return this.#set(key, bytes);
  }

  #set(key: string, bytes: Uint8Array): string {
    const version = `m${++this.#writes}`;
    this.#objects.set(key, bytes.slice());
    this.#versions.set(key, version);
    return version;
  }

  async list(prefix: string): Promise<string[]> {
    check.prefix(prefix);
    return [...this.#objects.keys()].filter((key) => key.startsWith(prefix)).sort();
  }

  /**
   * Resolves and keeps the objects: a MemoryStore holds no resource but its memory, which it keeps for
   * the next openStore("memory://<name>") of the process. It closes like the other stores so that code
   * given any store from openStore can close it.
   */
  async close(): Promise<void> {}
}
