import { createHash } from "node:crypto";
import { crc32c } from "@zarr-stream/codecs";
import { Fenced, StoreError } from "@zarr-stream/spec";
import { canFence, type FencingStore, type Store } from "@zarr-stream/store";
import {
  type LeaseDoc,
  leaseBytes,
  leaseKey,
  newLease,
  parseLease,
  SEALS_KEPT,
  storedLease,
} from "./writer-lease.js";

/** How often a lease holder overwrites a key that another write keeps changing before it gives up. */
const OVERWRITE_ATTEMPTS = 8;

const digest = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.from(a.buffer, a.byteOffset, a.length).equals(b);
}

/**
 * Every object one writer handle PUTs, fenced: each write is conditional on the version of the object this
 * handle last wrote or read (absent when it has seen neither), so a write made by anyone else in between
 * makes ours fail instead of silently replacing theirs.
 *
 * A refused write is explained before it is reported:
 * - the object already holds exactly our bytes (an earlier attempt landed and its acknowledgement was
 *   lost): the write succeeded;
 * - it holds the bytes of an earlier attempt of ours whose outcome was unknown: that attempt landed, and
 *   the write is retried on its version;
 * - this handle still holds its writer lease (no successor has resumed or joined as this writer): the
 *   object is a leftover of a dropped handle or a stale write of a fenced one, and `mayOverwrite` decides
 *   whether the holder replaces it;
 * - otherwise another handle of this writer is live: Fenced, and this handle refuses every further write.
 */
export class FencedObjects {
  readonly store: FencingStore;
  readonly #versions = new Map<string, string | null>();
  /** Digest of the bytes of a write whose outcome is unknown (it threw, or its acknowledgement was lost). */
  readonly #uncertain = new Map<string, string>();
  /** CRC-32C of each data object written since its last token (putData). */
  readonly #checksums = new Map<string, number>();
  #lease: { key: string; version: string; doc: LeaseDoc } | undefined;
  /** A seal whose write threw: it may have landed, and then the lease holds exactly these bytes. */
  #unsettledSeal: { bytes: Uint8Array; doc: LeaseDoc } | undefined;
  #fenced: Fenced | undefined;

  /** Asked before a lease holder overwrites an object another write changed; false means Fenced. */
  mayOverwrite: (key: string) => Promise<boolean> = async () => true;

  /** `job`: the launch this handle belongs to, recorded in the leases it takes (RunRank.job). */
  constructor(
    store: Store,
    private readonly job: string | null = null,
  ) {
    if (!canFence(store)) {
      throw new StoreError(
        `${store.url} cannot fence writes (it lacks getVersioned, version or putIfVersion): a zarr-stream writer needs conditional puts`,
      );
    }
    this.store = store;
  }

  assertUnfenced(): void {
    if (this.#fenced) throw this.#fenced;
  }

  /** The nonce of the lease this handle holds (none before it takes one). */
  get leaseNonce(): string | undefined {
    return this.#lease?.doc.nonce;
  }

  /** Marks the handle fenced (for a refusal found elsewhere, e.g. the manifest) and returns the error. */
  fence(key: string, why: string): Fenced {
    this.#fenced ??= new Fenced(`${why}: this handle writes nothing more; resume the store to go on`, key);
    return this.#fenced;
  }

  /**
   * Takes writer `writer`'s lease: creates it (`create`, failing with false when it exists) or replaces
   * whatever holds it now, which fences the handle that held it before.
   */
  async takeLease(writer: number, create: boolean): Promise<boolean> {
    const key = leaseKey(writer);
    let current = create ? undefined : await this.store.getVersioned(key);
    for (let attempt = 0; ; attempt++) {
      const doc = newLease(writer, current?.bytes, this.job);
      const version = await this.#putLease(key, leaseBytes(doc), current?.version ?? null);
      if (version !== undefined) {
        this.#lease = { key, version, doc };
        this.#versions.set(key, version);
        if (writer !== 0) await this.#yieldToOwnersLaunch(writer, current);
        return true;
      }
      if (create) return false;
      // The handle being taken over may have sealed a token meanwhile (same lease, one more seal): take
      // over from that. A lease with another nonce is another takeover that won the race.
      const now = await this.store.getVersioned(key);
      if (attempt < OVERWRITE_ATTEMPTS && now !== undefined && sameHolder(now.bytes, current?.bytes)) {
        current = now;
        continue;
      }
      throw this.fence(key, `writer ${writer}'s lease was taken by another handle at the same moment`);
    }
  }

  /**
   * Of a job started twice, the launch whose owner holds writer 0's lease goes on (RunOpener). A
   * contributor checks that before it takes its lease, and a newer launch's owner and contributor can
   * both act between that check and the take: this handle then took the lease from the launch that goes
   * on. Checked again after the take, before this handle writes anything, it puts the lease back as it
   * was (compare-and-swap on its own version) and is Fenced, so the other launch's handle never notices.
   */
  async #yieldToOwnersLaunch(writer: number, taken: { bytes: Uint8Array; version: string } | undefined) {
    if (this.job === null) return;
    const owner = await storedLease(this.store, 0);
    const launch = owner.present ? (owner.lease?.job ?? null) : null;
    if (launch === null || launch === this.job) return;
    const key = leaseKey(writer);
    if (taken !== undefined) await this.store.putIfVersion(key, taken.bytes, this.#lease!.version);
    throw this.fence(
      key,
      `writer 0's lease names launch ${launch}, not this process's launch ${this.job}: this launch is a duplicate of a job started again, and the other launch goes on`,
    );
  }

  /**
   * Seals a token this handle flushed into its lease (fencing.md, "Sealed tokens"): a compare-and-swap on
   * the lease version it holds, so a handle whose lease was taken is Fenced here, before its token
   * leaves, and the owner commits only tokens that the live handle of their writer sealed.
   */
  async sealToken(tokenDigest: string): Promise<void> {
    if (this.#unsettledSeal !== undefined) await this.assertLease();
    this.assertUnfenced();
    const lease = this.#lease;
    if (lease === undefined) return;
    if (lease.doc.sealed.includes(tokenDigest)) return;
    const doc = { ...lease.doc, sealed: [...lease.doc.sealed, tokenDigest].slice(-SEALS_KEPT) };
    const bytes = leaseBytes(doc);
    let version: string | undefined;
    for (let attempt = 0; version === undefined; attempt++) {
      try {
        version = await this.#putLease(lease.key, bytes, this.#lease!.version);
      } catch (err) {
        // Outcome unknown: the next lease check adopts these bytes if they are what the lease holds.
        this.#unsettledSeal = { bytes, doc };
        throw err;
      }
      if (version === undefined && (attempt > 0 || !(await this.#adoptRestored())))
        throw this.fence(lease.key, "another handle has taken this writer's lease");
    }
    this.#holdLease(version, doc);
  }

  /**
   * The lease holds this handle's own bytes under another version: a duplicate launch's handle took it
   * and put it back (#yieldToOwnersLaunch). The nonce makes the bytes this handle's alone, so it holds
   * the lease still, at the new version.
   */
  async #adoptRestored(): Promise<boolean> {
    const lease = this.#lease!;
    const now = await this.store.getVersioned(lease.key);
    if (now === undefined || !sameBytes(now.bytes, leaseBytes(lease.doc))) return false;
    this.#holdLease(now.version, lease.doc);
    return true;
  }

  #holdLease(version: string, doc: LeaseDoc): void {
    const key = this.#lease!.key;
    this.#lease = { key, version, doc };
    this.#versions.set(key, version);
    this.#unsettledSeal = undefined;
  }

  /** A conditional lease write; a refusal whose bytes are ours is our own write with its answer lost. */
  async #putLease(key: string, body: Uint8Array, expected: string | null): Promise<string | undefined> {
    const version = await this.store.putIfVersion(key, body, expected);
    if (version !== undefined) return version;
    const now = await this.store.getVersioned(key);
    return now !== undefined && sameBytes(now.bytes, body) ? now.version : undefined;
  }

  /** True while no other handle has taken this handle's lease since it took it. */
  async holdsLease(): Promise<boolean> {
    const lease = this.#lease;
    if (lease === undefined) return false;
    if (this.#unsettledSeal === undefined)
      return (await this.store.version(lease.key)) === lease.version || this.#adoptRestored();
    const now = await this.store.getVersioned(lease.key);
    if (now === undefined) return false;
    if (now.version === lease.version) return true;
    if (!sameBytes(now.bytes, this.#unsettledSeal.bytes)) return false;
    this.#holdLease(now.version, this.#unsettledSeal.doc);
    return true;
  }

  /** Refuses (Fenced) once another handle has taken this handle's lease. */
  async assertLease(): Promise<void> {
    this.assertUnfenced();
    if (this.#lease !== undefined && !(await this.holdsLease()))
      throw this.fence(this.#lease.key, "another handle has taken this writer's lease");
  }

  /**
   * Reads an object and remembers its version as the one the next write of it is conditional on. The
   * lease is checked after the read: a version that a successor wrote is never adopted by a handle it has
   * fenced, whose view of what is committed is stale.
   */
  async read(key: string): Promise<Uint8Array | undefined> {
    this.assertUnfenced();
    const got = await this.store.getVersioned(key);
    await this.assertLease();
    this.#versions.set(key, got?.version ?? null);
    return got?.bytes;
  }

  /**
   * A data object (shard, static, blob): written like `put`, with the CRC-32C of what landed kept for the
   * next token's flush receipt (commit-ledger.ts), computed on the codec pool while the write runs.
   */
  async putData(key: string, bytes: Uint8Array): Promise<void> {
    const [, crc] = await Promise.all([this.put(key, bytes), crc32c(bytes)]);
    this.#checksums.set(key, crc);
  }

  /** The CRC-32C of each of `keys` this handle wrote as a data object, as it last wrote it. */
  checksumsOf(keys: Iterable<string>): Record<string, number> {
    const out: Record<string, number> = {};
    for (const key of keys) {
      const crc = this.#checksums.get(key);
      if (crc !== undefined) out[key] = crc;
    }
    return out;
  }

  /** Forgets the checksums of a token's objects once the token is handed off. */
  dropChecksums(keys: Iterable<string>): void {
    for (const key of keys) this.#checksums.delete(key);
  }

  /** Forgets keys this handle writes no more, so their versions do not pile up over a long run. */
  forget(keys: Iterable<string>): void {
    for (const key of keys) {
      this.#versions.delete(key);
      this.#uncertain.delete(key);
    }
  }

  /**
   * Writes `data` at `key` conditional on the version last seen. Throws Fenced when another live handle
   * changed the object, and rethrows store errors after recording that the outcome is unknown. When the
   * lease holder replaces an object someone else changed, `rebuild` makes the bytes from theirs (the root
   * zarr.json, whose attributes the control plane and users add to).
   */
  async put(key: string, data: Uint8Array, rebuild?: (current: Uint8Array) => Uint8Array): Promise<void> {
    let bytes = data;
    this.assertUnfenced();
    let expected = this.#versions.get(key) ?? null;
    for (let attempt = 0; ; attempt++) {
      let version: string | undefined;
      try {
        version = await this.store.putIfVersion(key, bytes, expected);
      } catch (err) {
        this.#uncertain.set(key, digest(bytes));
        throw err;
      }
      if (version !== undefined) {
        this.#versions.set(key, version);
        this.#uncertain.delete(key);
        return;
      }
      const current = await this.store.getVersioned(key);
      if (current !== undefined && sameBytes(current.bytes, bytes)) {
        this.#versions.set(key, current.version);
        this.#uncertain.delete(key);
        return;
      }
      const earlier = this.#uncertain.get(key);
      this.#uncertain.delete(key);
      if (current !== undefined && earlier !== undefined && earlier === digest(current.bytes)) {
        expected = current.version;
        continue;
      }
      if (attempt < OVERWRITE_ATTEMPTS && (await this.holdsLease()) && (await this.mayOverwrite(key))) {
        expected = current?.version ?? null;
        if (rebuild !== undefined && current !== undefined) bytes = rebuild(current.bytes);
        continue;
      }
      throw this.fence(key, `${key} was changed by another handle since this one last wrote or read it`);
    }
  }
}

/** Whether two lease bodies are one holder's (the same nonce): they differ at most by its seals. */
function sameHolder(a: Uint8Array, b: Uint8Array | undefined): boolean {
  if (b === undefined) return false;
  const [x, y] = [parseLease(a), parseLease(b)];
  return x !== undefined && y !== undefined && x.nonce !== "" && x.nonce === y.nonce;
}
