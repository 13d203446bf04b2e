import { MANIFEST_KEY, manifestPageRefs } from "@zarr-stream/reader";
import {
  CommitError,
  type CommitToken,
  CorruptStore,
  type ManifestPage,
  manifestPageKey,
  OUTPUT_MANIFEST_V2_PAGED,
  type OutputManifest,
} from "@zarr-stream/spec";
import type { SpanRecord } from "./control-plane-link.js";
import { type FencedObjects, sameBytes } from "./fenced-objects.js";
import { runLimited } from "./limit.js";
import { type CommittedState, serializeManifest } from "./manifest-doc.js";
import { ManifestPager } from "./manifest-pages.js";

/** The pages a manifest write refers to: those to write first, and the keys of all of them. */
export interface PageSet {
  fresh: ManifestPage<object>[];
  keys: string[];
}

/** A manifest write, with what it commits. */
export interface ManifestWrite {
  bytes: Uint8Array;
  state: CommittedState;
  manifest: OutputManifest;
  /** The tokens the commit carries, so a retried call (or a Single writer's pending set) can be matched. */
  carried?: CommitToken[];
  /** A paged manifest's pages (docs/manifest-pages.md). */
  pages?: PageSet;
  /** The control-plane record the write owes once it lands, even when it is found landed later. */
  record?: SpanRecord;
}

/**
 * The owner's commit point (seed §5.3): output_manifest.json written compare-and-swap on the version this
 * owner last wrote or read, after checking that it still holds its lease. A write whose outcome is unknown
 * (it threw: a timeout, a lost acknowledgement) is remembered and settled before the next one: either it
 * landed, and its state becomes the committed state, or it did not, and nothing changed.
 */
export class ManifestCommits {
  #uncertain: ManifestWrite | undefined;
  readonly #pager = new ManifestPager();
  /** Page keys of the last manifests known to have landed, oldest first (at most three). */
  #landed: string[][] = [];

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

  /**
   * Adopts a manifest read from the store at `tag`: the pages it refers to are there. Pages known from
   * earlier manifests are not: a resume that read the manifest before taking the lease adopts the commits
   * of the handle it took over from, which may have collected them.
   */
  adoptRead(m: OutputManifest | undefined, tag: string | null): void {
    this.tag = tag;
    const paged = (m && manifestPageRefs(m)) ?? [];
    this.#landed = [paged.flatMap((g) => g.refs.map((r) => manifestPageKey(g.list, r.sha256)))];
    this.#pager.knowStoredOnly(paged.flatMap((g) => g.refs));
  }

  /**
   * The bytes of `manifest` as stored and the pages they need. Only a manifest in the paged form (its
   * label) is paged, once a list outgrows a page; v1 and the seed's v2 are stored whole at any size.
   */
  compose(manifest: OutputManifest): { bytes: Uint8Array; pages?: PageSet } {
    if (manifest.schema !== OUTPUT_MANIFEST_V2_PAGED) return { bytes: serializeManifest(manifest) };
    const c = this.#pager.compose(manifest);
    const bytes = serializeManifest(c.stored);
    if (c.pages.length === 0) return { bytes };
    return { bytes, pages: { fresh: c.fresh, keys: c.pages.map((p) => this.#pageKey(p)) } };
  }

  /**
   * A page's key, made once per page: an unchanged page is the same object from commit to commit, so its
   * key is the same string, whose hash the collection's sets then compute once.
   */
  readonly #pageKeys = new WeakMap<ManifestPage<object>, string>();
  #pageKey(page: ManifestPage<object>): string {
    let key = this.#pageKeys.get(page);
    if (key === undefined) {
      key = manifestPageKey(page.list, page.ref.sha256);
      this.#pageKeys.set(page, key);
    }
    return key;
  }

  /**
   * Writes the pages a manifest needs, create-only, before the manifest: a page is named by its sha256, so
   * one already there must hold exactly these bytes, or the store is corrupt.
   */
  async #writePages(pages: PageSet | undefined): Promise<void> {
    if (pages === undefined || pages.fresh.length === 0) return;
    const store = this.objects.store;
    await runLimited(
      pages.fresh.map((page) => async () => {
        const key = manifestPageKey(page.list, page.ref.sha256);
        if ((await store.putIfVersion(key, page.bytes, null)) !== undefined) return;
        const there = await store.get(key);
        if (there === undefined || !sameBytes(there, page.bytes))
          throw new CorruptStore(`${key} holds bytes other than the page its name hashes`, key);
      }),
      16,
    );
    this.#pager.markWritten(pages.fresh);
  }

  /**
   * A manifest landed: pages that the manifest before the previous one referred to and neither later one
   * does are deleted, so a reader holding the previous manifest still finds its pages (rule 5). A Single
   * writer's close rewrites the manifest at the same commit_seq, which counts as a landed manifest and so
   * collects one commit early; rule 5 says why a reader stays correct. A handle that no longer holds its
   * lease deletes nothing; a failed delete leaves an unreferenced page behind.
   */
  async #landedPages(keys: string[]): Promise<void> {
    this.#landed.push(keys);
    if (this.#landed.length <= 2) return;
    const old = this.#landed.shift()!;
    const [previous, last] = this.#landed as [string[], string[]];
    // Most pages stay at their position from manifest to manifest as the same key string, so a key is
    // looked up in the newer manifests' keys only when neither holds it at its position.
    let kept: Set<string> | undefined;
    const gone = old.filter((k, i) => {
      if (previous[i] === k || last[i] === k) return false;
      kept ??= new Set([...previous, ...last]);
      return !kept.has(k);
    });
    if (gone.length === 0) return;
    // The commit has landed: collection failing (a store error) must not make it look failed.
    try {
      if (!(await this.objects.holdsLease())) return;
      const store = this.objects.store;
      this.#pager.forget(gone.map((k) => k.slice(k.lastIndexOf("/") + 1, -".json".length)));
      await runLimited(
        gone.map((key) => async () => {
          await store.delete(key);
        }),
        16,
      );
    } catch {
      // A page left behind is unreferenced and invisible.
    }
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
    await this.#writePages(write.pages);
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
      // retry was refused), another owner wrote it. Until the read tells which, the outcome is unknown.
      this.#uncertain = write;
      const current = await store.getVersioned(MANIFEST_KEY);
      this.#uncertain = undefined;
      if (current === undefined || !sameBytes(current.bytes, write.bytes)) return false;
      tag = current.version;
    }
    this.tag = tag;
    await this.#landedPages(write.pages?.keys ?? []);
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
    await this.#landedPages(pending.pages?.keys ?? []);
    return pending;
  }
}
