import {
  CorruptStore,
  isPagedManifest,
  MANIFEST_PAGE_SIZE,
  type ManifestPageFetch,
  type ManifestPageRef,
  manifestPageKey,
  type OutputManifest,
  type PagedEntry,
  type PagedList,
  type RecordEntry,
  resolveManifestPages,
  type StoredPages,
  validateManifestPage,
} from "@zarr-stream/spec";
import type { ReadableStore } from "@zarr-stream/store";
import { deepFreeze } from "./metadata-cache.js";

/**
 * Pages are immutable and named by their sha256, so one process-wide cache serves every store handle:
 * a page is fetched and checked once. Bounded by page count (a page holds 512 small entries).
 */
const PAGE_CACHE_LIMIT = 1024;
const pageCache = new Map<string, readonly object[]>();

/** Resolved manifests by the text they were resolved from: an unchanged manifest is not resolved again. */
const RESOLVED_CACHE_LIMIT = 8;
const resolvedCache = new Map<string, OutputManifest>();

/** The sealed pages each resolved manifest was stored with, for writers that commit on top of it. */
const storedPages = new WeakMap<OutputManifest, StoredPages[]>();

function remember<V>(cache: Map<string, V>, key: string, value: V, limit: number): void {
  cache.set(key, value);
  if (cache.size > limit) cache.delete(cache.keys().next().value!);
}

class MissingPage extends Error {
  constructor(readonly key: string) {
    super(`${key} is missing`);
  }
}

/** A page the manifest names is gone: a newer manifest may have landed and its owner collected it. */
export function isMissingPage(err: unknown): boolean {
  return err instanceof MissingPage;
}

function pageFetch(store: ReadableStore): ManifestPageFetch {
  return async <L extends PagedList>(list: L, ref: ManifestPageRef): Promise<PagedEntry<L>[]> => {
    const hit = pageCache.get(ref.sha256);
    if (hit !== undefined) {
      pageCache.delete(ref.sha256);
      pageCache.set(ref.sha256, hit);
      return hit as PagedEntry<L>[];
    }
    const key = manifestPageKey(list, ref.sha256);
    const bytes = await store.get(key);
    if (bytes === undefined) throw new MissingPage(key);
    // Shared between callers through the cache, so frozen: a caller's edit would reach other handles.
    const entries = validateManifestPage(list, ref, bytes);
    for (const e of entries) Object.freeze(e);
    remember(pageCache, ref.sha256, Object.freeze(entries), PAGE_CACHE_LIMIT);
    return entries;
  };
}

/** A manifest object as read: its bytes and whatever version tag came with them. */
export interface ManifestBytes<V> {
  bytes: Uint8Array;
  version: V;
}

async function resolveOnce<V>(
  store: ReadableStore,
  read: ManifestBytes<V>,
  parse: (bytes: Uint8Array) => OutputManifest,
): Promise<OutputManifest> {
  const text = new TextDecoder().decode(read.bytes);
  const cached = resolvedCache.get(text);
  if (cached !== undefined) return cached;
  const stored = parse(read.bytes);
  if (!isPagedManifest(stored)) return stored;
  const pages: StoredPages[] = [];
  const resolved = await resolveManifestPages(stored, pageFetch(store), pages);
  // Shared by every caller that reads the same bytes: none may change it.
  deepFreeze(resolved);
  storedPages.set(resolved, pages);
  remember(resolvedCache, text, resolved, RESOLVED_CACHE_LIMIT);
  return resolved;
}

/**
 * The manifest read from `read`, its pages resolved (docs/manifest-pages.md). A page found missing may
 * have been collected after a newer manifest landed: the manifest is read again once, and a page missing
 * from that one too is CorruptStore.
 */
export async function resolveManifestBytes<V>(
  store: ReadableStore,
  read: ManifestBytes<V>,
  parse: (bytes: Uint8Array) => OutputManifest,
  reread: () => Promise<ManifestBytes<V> | undefined>,
): Promise<{ manifest: OutputManifest; version: V }> {
  try {
    return { manifest: await resolveOnce(store, read, parse), version: read.version };
  } catch (err) {
    if (!(err instanceof MissingPage)) throw err;
  }
  const again = await reread();
  try {
    if (again === undefined) throw new MissingPage("output_manifest.json");
    return { manifest: await resolveOnce(store, again, parse), version: again.version };
  } catch (err) {
    if (err instanceof MissingPage)
      throw new CorruptStore(`${err.key} is missing, yet the store's manifest refers to it`, err.key);
    throw err;
  }
}

/**
 * The refs of the sealed pages a manifest read through this module was stored with, by list (index pages
 * and the record pages they name included); undefined for an inline manifest. A writer committing on top
 * of it knows these pages exist and need no write.
 */
export function manifestPageRefs(m: OutputManifest): StoredPages[] | undefined {
  return storedPages.get(m);
}

/** The ref among `refs` (laid end to end from 0) whose range holds list position `at`, by bisection. */
function refHolding(refs: readonly ManifestPageRef[], at: number): ManifestPageRef | undefined {
  let lo = 0;
  let hi = refs.length;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (refs[mid]!.first <= at) lo = mid;
    else hi = mid;
  }
  const ref = refs[lo];
  return ref !== undefined && at >= ref.first && at < ref.first + ref.count ? ref : undefined;
}

/**
 * Record `index`'s entry in a paged indexed manifest as stored, from the one page that holds it and, when
 * the record pages have index pages, the one index page naming that page (each fetched and checked like
 * any page, and cached by sha256); undefined when no page holds it. Throws what isMissingPage recognises
 * when a page is gone.
 */
export async function pagedRecordEntry(
  store: ReadableStore,
  records: { pages?: readonly ManifestPageRef[]; page_index?: readonly ManifestPageRef[] },
  index: number,
): Promise<RecordEntry | undefined> {
  const fetch = pageFetch(store);
  let refs = records.pages;
  if (records.page_index !== undefined) {
    // Record pages hold MANIFEST_PAGE_SIZE entries each (the last fewer), so the position of the one
    // holding `index` in the list of record pages is known; the record page's own range is checked below.
    const holder = refHolding(records.page_index, Math.floor(index / MANIFEST_PAGE_SIZE));
    if (holder === undefined) return undefined;
    refs = await fetch("record_pages", holder);
  }
  const ref = refs && refHolding(refs, index);
  if (ref === undefined) return undefined;
  const entries = await fetch("records", ref);
  return entries[index - ref.first];
}
