import {
  indexPages,
  MANIFEST_PAGE_SIZE,
  type ManifestPage,
  type ManifestPageRef,
  makeManifestPage,
  type OutputManifestV2,
  type PagedEntry,
  type PagedList,
  pagedManifest,
  type RecordEntry,
  splitPagedList,
  type TimeShardEntry,
} from "@zarr-stream/spec";
import { changedSince } from "./list-lineage.js";
import { entriesBehind, RecordEntries } from "./record-entries.js";

/** A manifest as the owner writes it: the stored (paged) document and the pages it refers to. */
export interface ComposedManifest {
  stored: OutputManifestV2;
  /** Every sealed page the stored document refers to, in list order, index pages last. */
  pages: ManifestPage<object>[];
  /** The pages not known to exist in the store yet: written create-only before the manifest. */
  fresh: ManifestPage<object>[];
}

const sameShard = (a: TimeShardEntry, b: TimeShardEntry) =>
  a === b || (a.index === b.index && a.t_start === b.t_start && a.t_end === b.t_end && a.n === b.n);

function sameEntries<T>(a: readonly T[], b: readonly T[], same: (x: T, y: T) => boolean): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!same(a[i]!, b[i]!)) return false;
  return true;
}

/**
 * The owner's manifest pages (docs/manifest-pages.md): it keeps every sealed page it wrote or read, with
 * its bytes, so a commit serialises and writes only the pages whose entries changed; the rest of the
 * document is the head, the refs and the tail.
 */
export class ManifestPager {
  /** The pages of the last composed manifest, by block slot. */
  #pages = new Map<number, ManifestPage<object>>();
  /** sha256 of the pages known to be in the store (written by this owner, or referred to by a manifest read). */
  readonly #stored = new Set<string>();
  /**
   * Record pages by the block of entries they were made from: blocks are never changed once made
   * (record-entries.ts), so an untouched block's page is reused without looking at its entries.
   */
  #blockPages = new WeakMap<readonly RecordEntry[], ManifestPage<object>>();
  /** The index pages of the last composed manifest, by group of record pages. */
  #indexPages = new Map<number, ManifestPage<ManifestPageRef>>();
  /** The time shards of the last composed manifest. */
  #shardSource: readonly TimeShardEntry[] | undefined;

  /**
   * A manifest read from the store: its pages exist there, and they are the only ones known to. A page
   * known from before may have been collected since by the handle whose commits the read adopts.
   */
  knowStoredOnly(refs: readonly ManifestPageRef[]): void {
    this.#stored.clear();
    for (const r of refs) this.#stored.add(r.sha256);
  }

  /** The pages of a composed manifest are in the store now (written create-only, or found there). */
  markWritten(pages: readonly ManifestPage<object>[]): void {
    for (const p of pages) this.#stored.add(p.ref.sha256);
  }

  /** Pages this owner deleted: writing the same entries again writes the page again. */
  forget(shas: Iterable<string>): void {
    for (const s of shas) this.#stored.delete(s);
  }

  /** The stored form of the resolved manifest `m`. */
  compose(m: OutputManifestV2): ComposedManifest {
    if (m.records !== undefined) {
      const { pages, fresh } = this.#recordPages(m.records);
      if (pages.length === 0) return { stored: m, pages, fresh };
      const refs = pages.map((p) => p.ref);
      const index = this.#indexPagesOf(refs);
      for (const p of index) if (!this.#stored.has(p.ref.sha256)) fresh.push(p);
      const stored = pagedManifest(m, { records: refs, recordIndex: index.map((p) => p.ref) });
      return { stored, pages: [...pages, ...index], fresh };
    }
    const { pages, fresh, tail } = this.#timeShardPages(m.time_shards);
    if (pages.length === 0) return { stored: m, pages, fresh };
    const stored = pagedManifest(m, { timeShards: { refs: pages.map((p) => p.ref), tail } });
    return { stored, pages, fresh };
  }

  /**
   * The index pages of the record pages' refs: a group whose record pages are the same objects as last
   * time (an untouched block keeps its page object) keeps its index page, so a commit makes one index page.
   */
  #indexPagesOf(refs: readonly ManifestPageRef[]): ManifestPage<ManifestPageRef>[] {
    const same = (a: ManifestPageRef, b: ManifestPageRef) => a === b;
    const index = indexPages(refs, (group, members) => {
      const kept = this.#indexPages.get(group);
      return kept !== undefined && sameEntries(kept.entries, members, same) ? kept : undefined;
    });
    this.#indexPages = new Map(index.map((p, group) => [group, p]));
    return index;
  }

  /** Record pages, one per block of entries once the list outgrows a page. */
  #recordPages(records: { entries: RecordEntry[] }) {
    const entries = entriesBehind(records) ?? RecordEntries.from(records.entries);
    const pages: ManifestPage<object>[] = [];
    const fresh: ManifestPage<object>[] = [];
    if (entries.length > MANIFEST_PAGE_SIZE) {
      entries.blocks.forEach((block, b) => {
        let page = this.#blockPages.get(block);
        if (page === undefined) {
          page = makeManifestPage("records", b * MANIFEST_PAGE_SIZE, block);
          this.#blockPages.set(block, page);
        }
        if (!this.#stored.has(page.ref.sha256)) fresh.push(page);
        pages.push(page);
      });
    }
    return { pages, fresh };
  }

  /**
   * Append time shards are dense (shard i at position i), so block b is positions [bP, (b+1)P): a sealed
   * block none of whose shards changed since the last composed manifest keeps its page unseen.
   */
  #timeShardPages(shards: readonly TimeShardEntry[]) {
    const P = MANIFEST_PAGE_SIZE;
    const changed = changedSince(shards, this.#shardSource);
    const dense = shards.length === 0 || shards[shards.length - 1]!.index === shards.length - 1;
    if (changed === undefined || !dense || shards.length <= P) {
      const out = this.#pageBlocks("time_shards", shards, sameShard);
      this.#shardSource = shards;
      return out;
    }
    const dirty = new Set(changed.map((i) => i - (i % P)));
    const sealedEnd = shards.length - (shards.length % P);
    const pages: ManifestPage<object>[] = [];
    const fresh: ManifestPage<object>[] = [];
    const next = new Map<number, ManifestPage<object>>();
    for (let first = 0; first < sealedEnd; first += P) {
      const kept = this.#pages.get(first);
      let page = kept !== undefined && !dirty.has(first) ? kept : undefined;
      if (page === undefined) {
        const block = shards.slice(first, first + P);
        const same = kept !== undefined && sameEntries(kept.entries as TimeShardEntry[], block, sameShard);
        page = same ? kept! : makeManifestPage("time_shards", first, block);
      }
      if (!this.#stored.has(page.ref.sha256)) fresh.push(page);
      pages.push(page);
      next.set(first, page);
    }
    this.#pages = next;
    this.#shardSource = shards;
    return { pages, fresh, tail: shards.slice(sealedEnd) };
  }

  #pageBlocks<L extends PagedList>(
    list: L,
    entries: readonly PagedEntry<L>[],
    same: (a: PagedEntry<L>, b: PagedEntry<L>) => boolean,
  ) {
    const { blocks, tail } = splitPagedList(list, entries);
    const pages: ManifestPage<object>[] = [];
    const fresh: ManifestPage<object>[] = [];
    const next = new Map<number, ManifestPage<object>>();
    for (const b of blocks) {
      const kept = this.#pages.get(b.slot) as ManifestPage<PagedEntry<L>> | undefined;
      let page: ManifestPage<object>;
      if (kept !== undefined && sameEntries(kept.entries, b.entries, same)) {
        page = kept.ref.first === b.first ? kept : { ...kept, ref: { ...kept.ref, first: b.first } };
      } else page = makeManifestPage(list, b.first, b.entries);
      if (!this.#stored.has(page.ref.sha256)) fresh.push(page);
      pages.push(page);
      next.set(b.slot, page);
    }
    this.#pages = next;
    return { pages, fresh, tail };
  }
}
