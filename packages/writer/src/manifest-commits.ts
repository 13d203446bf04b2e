import { MANIFEST_KEY } from "@zarr-stream/reader";
import { CommitError, type CommitToken, type OutputManifest } from "@zarr-stream/spec";
import type { FencedObjects } from "./fenced-objects.js";
import type { CommittedState } from "./manifest-doc.js";

/** A manifest write, with what it commits. */
export interface ManifestWrite {
  bytes: Uint8Array;
  state: CommittedState;
  manifest: OutputManifest;
  /** The tokens the commit carries, so a retried call (or a Single writer's pending set) can be matched. */
  carried?: CommitToken[];
}

const sameBytes = (a: Uint8Array, b: Uint8Array) =>
  a.length === b.length && Buffer.from(a.buffer, a.byteOffset, a.length).equals(b);

/**
 * The owner's commit point (seed §5.3): output_manifest.json written compare-and-swap on the version this
 * owner last wrote or read, after checking that it still holds its lease. A write whose outcome is unknown
 * (it threw: a timeout, a lost acknowledgement) is remembered and settled before the next one: either it
 * landed, and its state becomes the committed state, or it did not, and nothing changed.
 */
export class ManifestCommits {
  #uncertain: ManifestWrite | undefined;

  constructor(
    private readonly objects: FencedObjects,
    /** Version of the manifest last written or read; null when absent. */
    public tag: string | null,
    private readonly describe: { url: string; writer: number },
  ) {}

  concurrentOwner(): CommitError {
    this.objects.fence(MANIFEST_KEY, `${MANIFEST_KEY} changed under this owner`);
    return new CommitError(
      `${MANIFEST_KEY} of ${this.describe.url} changed since this owner last wrote or read it: another owner is committing to this store`,
      "concurrent-owner",
      [this.describe.writer],
    );
  }

  /** Refuses early when the manifest changed under this owner (another owner committed). */
  async assertUnchanged(): Promise<void> {
    await this.objects.assertLease();
    if (((await this.objects.store.version(MANIFEST_KEY)) ?? null) !== this.tag) throw this.concurrentOwner();
  }

  /** Writes the manifest (after `settle`); on success `write.state` is committed. */
  async write(write: ManifestWrite): Promise<void> {
    if (!(await this.tryWrite(write))) throw this.concurrentOwner();
  }

  /**
   * Writes the manifest (after `settle`) unless another owner changed it since this one last wrote or read
   * it: then false, and nothing is written.
   */
  async tryWrite(write: ManifestWrite): Promise<boolean> {
    await this.objects.assertLease();
    const store = this.objects.store;
    let tag: string | undefined;
    try {
      tag = await store.putIfVersion(MANIFEST_KEY, write.bytes, this.tag);
    } catch (err) {
      this.#uncertain = write;
      throw err;
    }
    if (tag === undefined) {
      // Refused: unless the manifest already holds exactly these bytes (our write landed and the store's
      // retry was refused), another owner wrote it.
      const current = await store.getVersioned(MANIFEST_KEY);
      if (current === undefined || !sameBytes(current.bytes, write.bytes)) return false;
      tag = current.version;
    }
    this.tag = tag;
    return true;
  }

  /**
   * Settles a write whose outcome was unknown: returns it when it landed (its state is then committed),
   * undefined when it did not or when there was none. Another owner's manifest there instead fences.
   */
  async settle(): Promise<ManifestWrite | undefined> {
    const pending = this.#uncertain;
    if (pending === undefined) return undefined;
    const current = await this.objects.store.getVersioned(MANIFEST_KEY);
    if ((current?.version ?? null) === this.tag) {
      this.#uncertain = undefined;
      return undefined;
    }
    if (current === undefined || !sameBytes(current.bytes, pending.bytes)) throw this.concurrentOwner();
    this.#uncertain = undefined;
    this.tag = current.version;
    return pending;
  }
}
