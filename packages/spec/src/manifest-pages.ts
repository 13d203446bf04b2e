import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import * as precompiled from "#precompiled-validators";
import { canonicalJsonUtf8 } from "./canonical-json.js";
import { checkOutputManifestV2Rules, hasPagedLists } from "./documents.js";
import { CorruptStore, SchemaError } from "./errors.js";
import { IntegralFloat } from "./exact-json.js";
import { pythonFloatRepr } from "./float.js";
import { manifestPageRef, recordEntry, timeShardEntry } from "./schemas/output-manifest.js";
import {
  type ManifestPageRef,
  OUTPUT_MANIFEST_V2_PAGED,
  type OutputManifest,
  type OutputManifestV2,
  type RecordEntry,
  type TimeShardEntry,
} from "./types.js";
import { makeValidator } from "./validate.js";

/** Entries per sealed page; a list of at most this many stays inline (docs/manifest-pages.md). */
export const MANIFEST_PAGE_SIZE = 512;
/**
 * Record page refs per index page: an indexed manifest with more record pages than this keeps their refs
 * in index pages, so its head stays small however long the time axis is (docs/manifest-pages.md rule 2).
 */
export const MANIFEST_INDEX_PAGE_SIZE = 32;
/** Where pages live: beside the Zarr hierarchy, in a folder no Zarr reader opens. */
export const MANIFEST_PAGE_PREFIX = ".zarr-stream/manifest/";

/**
 * The lists a v2 manifest pages: `records.entries` (indexed) and `time_shards` (append), and the refs of
 * the record pages themselves (`record_pages`) once there are more than an index page holds.
 */
export type PagedList = "records" | "time_shards" | "record_pages";
export type PagedEntry<L extends PagedList> = L extends "records"
  ? RecordEntry
  : L extends "time_shards"
    ? TimeShardEntry
    : ManifestPageRef;

/** A sealed page: its list, its ref, its bytes as stored, and the entries they hold. */
export interface ManifestPage<T> {
  list: PagedList;
  ref: ManifestPageRef;
  bytes: Uint8Array;
  entries: readonly T[];
}

const FLOAT_FIELDS = new Set(["t", "t_start", "t_end"]);

/** Python's float repr; positional shortest round-trip text is the same in JS and Python in [1e-4, 1e16). */
function floatText(x: number): string {
  const a = Math.abs(x);
  if (Number.isInteger(x) && a < 1e16) return Object.is(x, -0) ? "-0.0" : `${x}.0`;
  if (a >= 1e-4 && a < 1e16) return String(x);
  return pythonFloatRepr(x);
}

const HEX = /^[0-9a-f]*$/;

/**
 * One entry's canonical text: its keys are plain ASCII names and its values booleans, numbers and (a page
 * ref's sha256) lowercase hex, which JSON prints without escapes.
 */
function entryText(e: object): string | undefined {
  const record = e as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  let out = "{";
  for (const k of keys) {
    const v = record[k];
    let text: string;
    if (typeof v === "boolean") text = v ? "true" : "false";
    else if (typeof v === "string" && HEX.test(v)) text = `"${v}"`;
    else if (typeof v === "number" && Number.isFinite(v))
      text = FLOAT_FIELDS.has(k) ? floatText(v) : Number.isSafeInteger(v) ? String(v) : pythonFloatRepr(v);
    else return undefined;
    out += `${out.length > 1 ? "," : ""}"${k}":${text}`;
  }
  return `${out}}`;
}

/**
 * A page's bytes: the canonical UTF-8 JSON array of its entries (sorted keys, no whitespace), times as
 * floats the way Python prints them, so Python's `json.dumps(entries, sort_keys=True,
 * separators=(",", ":"), ensure_ascii=False)` gives the same bytes. Entries are printed directly (a
 * commit serialises a page of 512); anything but the three entry shapes goes through canonicalJsonUtf8.
 */
export function manifestPageBytes(entries: readonly object[]): Uint8Array {
  const parts: string[] = [];
  for (const e of entries) {
    const text = entryText(e);
    if (text === undefined) return new TextEncoder().encode(canonicalJsonUtf8(entries.map(floatsMarked)));
    parts.push(text);
  }
  return new TextEncoder().encode(`[${parts.join(",")}]`);
}

function floatsMarked(e: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(e))
    out[k] = FLOAT_FIELDS.has(k) && typeof v === "number" && Number.isInteger(v) ? new IntegralFloat(v) : v;
  return out;
}

export function sha256Hex(bytes: Uint8Array): string {
  return bytesToHex(sha256(bytes));
}

/** A page's key: its list and its sha256, so a page is named by its content and never rewritten. */
export function manifestPageKey(list: PagedList, sha: string): string {
  return `${MANIFEST_PAGE_PREFIX}${list}/${sha}.json`;
}

/** The page of `entries` of `list`, which start at list position `first`. */
export function makeManifestPage<T extends object>(
  list: PagedList,
  first: number,
  entries: readonly T[],
): ManifestPage<T> {
  const bytes = manifestPageBytes(entries);
  return { list, ref: { first, count: entries.length, sha256: sha256Hex(bytes) }, bytes, entries };
}

/**
 * The index pages of an indexed manifest's record page refs: none while they fit in one index page, else
 * the refs cut into pages of MANIFEST_INDEX_PAGE_SIZE, each ref's position in the list of refs being its
 * list position. `reuse(g, refs)` may return the page made earlier from the same refs.
 */
export function indexPages(
  refs: readonly ManifestPageRef[],
  reuse?: (group: number, refs: readonly ManifestPageRef[]) => ManifestPage<ManifestPageRef> | undefined,
): ManifestPage<ManifestPageRef>[] {
  const R = MANIFEST_INDEX_PAGE_SIZE;
  if (refs.length <= R) return [];
  const out: ManifestPage<ManifestPageRef>[] = [];
  for (let first = 0; first < refs.length; first += R) {
    const group = refs.slice(first, first + R);
    out.push(reuse?.(first / R, group) ?? makeManifestPage("record_pages", first, group));
  }
  return out;
}

/** A block of a list: the entries whose slot falls in `[slot, slot + P)`, from list position `first`. */
export interface ListBlock<T> {
  slot: number;
  first: number;
  entries: readonly T[];
}

/**
 * Splits a list into sealed blocks and an inline tail (docs/manifest-pages.md rule 2); a list of at most
 * P entries is all tail. Block b holds the entries whose slot is in `[bP, (b+1)P)`.
 * - `records` (indexed mode): the slot is the position. The list's length is the time axis, fixed at
 *   create, so every block is sealed, the last one possibly short, and the tail is empty.
 * - `time_shards` (append mode): the slot is the shard index. The blocks ending at or before the last
 *   shard's index + 1 are sealed, so every sealed page holds P shards and the tail fewer than P.
 */
export function splitPagedList<L extends PagedList>(
  list: L,
  entries: readonly PagedEntry<L>[],
): { blocks: ListBlock<PagedEntry<L>>[]; tail: PagedEntry<L>[] } {
  const P = MANIFEST_PAGE_SIZE;
  if (entries.length <= P) return { blocks: [], tail: entries.slice() };
  const blocks: ListBlock<PagedEntry<L>>[] = [];
  if (list === "records") {
    for (let first = 0; first < entries.length; first += P)
      blocks.push({ slot: first, first, entries: entries.slice(first, first + P) });
    return { blocks, tail: [] };
  }
  const slotOf = (i: number) => (entries[i] as TimeShardEntry).index;
  const sealedEnd = Math.floor((slotOf(entries.length - 1) + 1) / P) * P;
  let i = 0;
  while (i < entries.length && slotOf(i) < sealedEnd) {
    const slot = Math.floor(slotOf(i) / P) * P;
    const first = i;
    while (i < entries.length && slotOf(i) < slot + P) i++;
    blocks.push({ slot, first, entries: entries.slice(first, i) });
  }
  return { blocks, tail: entries.slice(i) };
}

/**
 * The time shards of an indexed store, derived from its record entries (docs/output-manifest-v2.md):
 * one per shard holding a committed record, with the least and greatest committed t and their count.
 */
export function indexedTimeShards(entries: readonly RecordEntry[], shardT: number): TimeShardEntry[] {
  const out: TimeShardEntry[] = [];
  let open: TimeShardEntry | undefined;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (!e.committed) continue;
    const index = Math.floor(i / shardT);
    if (open?.index !== index) {
      open = { index, t_start: e.t, t_end: e.t, n: 1 };
      out.push(open);
    } else {
      // Times increase along the axis (a v2 rule), so the last committed record holds the greatest t.
      open.t_end = e.t;
      open.n += 1;
    }
  }
  return out;
}

/**
 * The paged manifest as stored, from the resolved one and the refs of its sealed pages, under the paged
 * label (a list's tail under the seed's label would be misread as the whole list). Indexed with paged
 * records: `records` is `{pages, entries: []}`, or `{page_index, entries: []}` when the record pages have
 * index pages, and `time_shards` is empty (derived on resolution). Append with paged time shards:
 * `time_shards` holds the tail and `time_shard_pages` (last key) the refs.
 */
export function pagedManifest(
  m: OutputManifestV2,
  pages: {
    records?: ManifestPageRef[];
    recordIndex?: ManifestPageRef[];
    timeShards?: { refs: ManifestPageRef[]; tail: TimeShardEntry[] };
  },
): OutputManifestV2 {
  const paged = { ...m, schema: OUTPUT_MANIFEST_V2_PAGED } as const;
  if (pages.recordIndex !== undefined && pages.recordIndex.length > 0)
    return { ...paged, time_shards: [], records: { page_index: pages.recordIndex, entries: [] } };
  if (pages.records !== undefined && pages.records.length > 0)
    return { ...paged, time_shards: [], records: { pages: pages.records, entries: [] } };
  if (pages.timeShards !== undefined && pages.timeShards.refs.length > 0)
    return { ...paged, time_shards: pages.timeShards.tail, time_shard_pages: pages.timeShards.refs };
  return paged;
}

/**
 * A v2 manifest in the paged form as stored, composed from the resolved one with fresh pages (pure; for
 * tests and tools).
 */
export function pageManifest(m: OutputManifestV2): {
  manifest: OutputManifestV2;
  pages: ManifestPage<object>[];
} {
  if (m.records !== undefined) {
    const { blocks } = splitPagedList("records", m.records.entries);
    const pages = blocks.map((b) => makeManifestPage("records", b.first, b.entries));
    const refs = pages.map((p) => p.ref);
    const index = indexPages(refs);
    const stored = pagedManifest(m, { records: refs, recordIndex: index.map((p) => p.ref) });
    return { manifest: stored, pages: [...pages, ...index] };
  }
  const { blocks, tail } = splitPagedList("time_shards", m.time_shards);
  const pages = blocks.map((b) => makeManifestPage("time_shards", b.first, b.entries));
  return { manifest: pagedManifest(m, { timeShards: { refs: pages.map((p) => p.ref), tail } }), pages };
}

/**
 * Whether a manifest as stored keeps a list in pages, which a reader must resolve: only the paged form
 * does (validateOutputManifest refuses page refs under the seed's label).
 */
export function isPagedManifest(m: OutputManifest): boolean {
  return m.schema === OUTPUT_MANIFEST_V2_PAGED && hasPagedLists(m);
}

const recordPage = /* @__PURE__ */ makeValidator<RecordEntry[]>(
  { $id: "zarr-stream:manifest-page-records", type: "array", minItems: 1, items: recordEntry },
  "manifest page (records)",
  precompiled.manifestPageRecords,
);
const timeShardPage = /* @__PURE__ */ makeValidator<TimeShardEntry[]>(
  { $id: "zarr-stream:manifest-page-time-shards", type: "array", minItems: 1, items: timeShardEntry },
  "manifest page (time_shards)",
  precompiled.manifestPageTimeShards,
);
const indexPage = /* @__PURE__ */ makeValidator<ManifestPageRef[]>(
  { $id: "zarr-stream:manifest-page-record-pages", type: "array", minItems: 1, items: manifestPageRef },
  "manifest page (record_pages)",
  precompiled.manifestPageRecordPages,
);
const pageValidators: { [L in PagedList]: (doc: unknown) => PagedEntry<L>[] } = {
  records: recordPage,
  time_shards: timeShardPage,
  record_pages: indexPage,
};

/**
 * Checks a fetched page before use: its bytes hash to the ref's sha256 (else CorruptStore: other bytes
 * sit at the key) and are a JSON array of `count` entries of the list's item schema (else SchemaError
 * naming the key).
 */
export function validateManifestPage<L extends PagedList>(
  list: L,
  ref: ManifestPageRef,
  bytes: Uint8Array,
): PagedEntry<L>[] {
  const key = manifestPageKey(list, ref.sha256);
  const actual = sha256Hex(bytes);
  if (actual !== ref.sha256) throw new CorruptStore(`${key}: its bytes hash to sha256 ${actual}`, key);
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (err) {
    throw new SchemaError(`${key}: not valid UTF-8 JSON (${(err as Error).message})`, "", key);
  }
  const entries = pageValidators[list](doc) as PagedEntry<L>[];
  if (entries.length !== ref.count)
    throw new SchemaError(`${key}: ${entries.length} entries, the manifest names ${ref.count}`, "", key);
  return entries;
}

/** Fetches and validates one page (validateManifestPage); the caller may cache it by sha256. */
export type ManifestPageFetch = <L extends PagedList>(
  list: L,
  ref: ManifestPageRef,
) => Promise<PagedEntry<L>[]>;

/** Pages fetched at once: enough to hide an object store's latency, few enough to be polite. */
const FETCH_CONCURRENCY = 16;

async function resolveList<L extends PagedList>(
  list: L,
  refs: ManifestPageRef[],
  tail: PagedEntry<L>[],
  fetch: ManifestPageFetch,
  pointerOf: (i: number) => string,
): Promise<PagedEntry<L>[]> {
  let at = 0;
  refs.forEach((ref, i) => {
    if (ref.first !== at) {
      const p = `${pointerOf(i)}/first`;
      throw new SchemaError(
        `output manifest v2-paged: ${p}: ${ref.first}, expected ${at}`,
        p,
        "output manifest v2-paged",
      );
    }
    at += ref.count;
  });
  const pages: PagedEntry<L>[][] = new Array(refs.length);
  let next = 0;
  const worker = async () => {
    while (next < refs.length) {
      const i = next++;
      pages[i] = await fetch(list, refs[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(FETCH_CONCURRENCY, refs.length) }, worker));
  const out: PagedEntry<L>[] = [];
  for (const page of pages) for (const e of page) out.push(e);
  for (const e of tail) out.push(e);
  return out;
}

/** The refs of one list's sealed pages, as a manifest refers to them. */
export interface StoredPages {
  list: PagedList;
  refs: ManifestPageRef[];
}

/**
 * The manifest with its paged list resolved (pages in order, then the tail; indexed time shards derived
 * from the entries), then checked by the v2 cross-field rules as a whole. An inline manifest is returned
 * as it is. Pages come from `fetch`; `stored`, when given, receives the refs of every page the manifest
 * refers to, index pages and the record pages they name included.
 */
export async function resolveManifestPages(
  m: OutputManifest,
  fetch: ManifestPageFetch,
  stored?: StoredPages[],
): Promise<OutputManifest> {
  if (m.schema !== OUTPUT_MANIFEST_V2_PAGED || !isPagedManifest(m)) return m;
  const { time_shard_pages, ...out } = m;
  if (time_shard_pages) {
    stored?.push({ list: "time_shards", refs: time_shard_pages });
    out.time_shards = await resolveList(
      "time_shards",
      time_shard_pages,
      m.time_shards,
      fetch,
      (i) => `/time_shard_pages/${i}`,
    );
  }
  const index = m.records?.page_index;
  const pages = index
    ? await resolveList("record_pages", index, [], fetch, (i) => `/records/page_index/${i}`)
    : m.records?.pages;
  if (index) stored?.push({ list: "record_pages", refs: index });
  if (m.records && pages) {
    stored?.push({ list: "records", refs: pages });
    // A record page ref read from an index page is named by the index page that holds it.
    const R = MANIFEST_INDEX_PAGE_SIZE;
    const pointerOf = index
      ? (i: number) => `/records/page_index/${Math.floor(i / R)}`
      : (i: number) => `/records/pages/${i}`;
    const entries = await resolveList("records", pages, m.records.entries, fetch, pointerOf);
    out.records = { entries };
    out.time_shards = indexedTimeShards(entries, m.shard_shape[m.time_dim]!);
  }
  checkOutputManifestV2Rules(out);
  return out;
}
