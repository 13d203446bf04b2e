import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { canonicalJsonUtf8 } from "./canonical-json.js";
import { checkOutputManifestV2Rules } from "./documents.js";
import { CorruptStore, SchemaError } from "./errors.js";
import { IntegralFloat } from "./exact-json.js";
import { manifestPageRef, recordEntry, timeShardEntry } from "./schemas/output-manifest.js";
import {
  type ManifestPageRef,
  OUTPUT_MANIFEST_V2,
  type OutputManifest,
  type OutputManifestV2,
  type RecordEntry,
  type TimeShardEntry,
} from "./types.js";
import { makeValidator } from "./validate.js";

/** Entries per sealed page; a list of at most this many stays inline (docs/manifest-pages.md). */
export const MANIFEST_PAGE_SIZE = 512;
/** Where pages live: beside the Zarr hierarchy, in a folder no Zarr reader opens. */
export const MANIFEST_PAGE_PREFIX = ".zarr-stream/manifest/";

/** The two lists a v2 manifest pages, by the field that holds their tail. */
export type PagedList = "records" | "time_shards";
type EntryOf<L extends PagedList> = L extends "records" ? RecordEntry : TimeShardEntry;

/** A sealed page: its ref, its bytes as stored, and the entries they hold. */
export interface ManifestPage<T> {
  ref: ManifestPageRef;
  bytes: Uint8Array;
  entries: readonly T[];
}

const FLOAT_FIELDS = new Set(["t", "t_start", "t_end"]);

/**
 * A page's bytes: the canonical UTF-8 JSON array of its entries (sorted keys, no whitespace), times as
 * floats the way Python prints them, so Python's `json.dumps(entries, sort_keys=True,
 * separators=(",", ":"), ensure_ascii=False)` gives the same bytes.
 */
export function manifestPageBytes(entries: readonly object[]): Uint8Array {
  const marked = entries.map((e) => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(e))
      out[k] = FLOAT_FIELDS.has(k) && typeof v === "number" && Number.isInteger(v) ? new IntegralFloat(v) : v;
    return out;
  });
  return new TextEncoder().encode(canonicalJsonUtf8(marked));
}

export function sha256Hex(bytes: Uint8Array): string {
  return bytesToHex(sha256(bytes));
}

/**
 * A page's key: its list, the first slot of its block (the list position for records, the time shard
 * index for time shards), and the first 16 hex digits of its sha256, so a changed page gets a new key.
 */
export function manifestPageKey(list: PagedList, slot: number, sha: string): string {
  return `${MANIFEST_PAGE_PREFIX}${list}/${slot}-${sha.slice(0, 16)}.json`;
}

/** The page of `entries`, which start at list position `first` and in block slot `slot`. */
export function makeManifestPage<T extends object>(
  list: PagedList,
  slot: number,
  first: number,
  entries: readonly T[],
): ManifestPage<T> {
  const bytes = manifestPageBytes(entries);
  const sha = sha256Hex(bytes);
  return {
    ref: { first, count: entries.length, key: manifestPageKey(list, slot, sha), sha256: sha },
    bytes,
    entries,
  };
}

/** A block of a list: the entries whose slot falls in `[slot, slot + P)`, from list position `first`. */
export interface ListBlock<T> {
  slot: number;
  first: number;
  entries: readonly T[];
}

/**
 * Splits a list into sealed blocks and an inline tail (docs/manifest-pages.md rule 2). A list of at most
 * P entries is all tail. Otherwise block b holds the entries whose slot is in `[bP, (b+1)P)`; the blocks
 * that end at or before the last entry's slot + 1 are sealed and the rest is the tail, so the tail has
 * fewer than P entries. Records use their position as slot (every sealed page has P entries); time
 * shards their index, so a time shard gaining its first committed record in indexed mode changes one
 * block, not every block after it. Empty blocks have no page.
 */
export function splitPagedList<L extends PagedList>(
  list: L,
  entries: readonly EntryOf<L>[],
): { blocks: ListBlock<EntryOf<L>>[]; tail: EntryOf<L>[] } {
  const P = MANIFEST_PAGE_SIZE;
  if (entries.length <= P) return { blocks: [], tail: entries.slice() };
  const slotOf =
    list === "records" ? (_e: EntryOf<L>, i: number) => i : (e: EntryOf<L>) => (e as TimeShardEntry).index;
  const sealedEnd = Math.floor((slotOf(entries[entries.length - 1]!, entries.length - 1) + 1) / P) * P;
  const blocks: ListBlock<EntryOf<L>>[] = [];
  let i = 0;
  while (i < entries.length) {
    const slot = slotOf(entries[i]!, i);
    if (slot >= sealedEnd) break;
    const blockSlot = Math.floor(slot / P) * P;
    const first = i;
    while (i < entries.length && slotOf(entries[i]!, i) < blockSlot + P) i++;
    blocks.push({ slot: blockSlot, first, entries: entries.slice(first, i) });
  }
  return { blocks, tail: entries.slice(i) };
}

/** Pages a list: one page per sealed block, built fresh (the writer reuses the pages it already has). */
export function pageList<L extends PagedList>(
  list: L,
  entries: readonly EntryOf<L>[],
): { pages: ManifestPage<EntryOf<L>>[]; tail: EntryOf<L>[] } {
  const { blocks, tail } = splitPagedList(list, entries);
  return { pages: blocks.map((b) => makeManifestPage(list, b.slot, b.first, b.entries)), tail };
}

/**
 * The manifest as stored: `records.entries` and `time_shards` replaced by their pages' refs plus tails.
 * Key order: `records` keeps `pages` before `entries`; `time_shard_pages` comes last.
 */
export function pagedManifest(
  m: OutputManifestV2,
  records: ManifestPageRef[],
  timeShards: { refs: ManifestPageRef[]; tail: TimeShardEntry[] },
  recordsTail: RecordEntry[] | undefined,
): OutputManifestV2 {
  const out: OutputManifestV2 = { ...m, time_shards: timeShards.tail };
  if (m.records) {
    out.records =
      records.length > 0 ? { pages: records, entries: recordsTail! } : { entries: recordsTail ?? [] };
  }
  if (timeShards.refs.length > 0) out.time_shard_pages = timeShards.refs;
  return out;
}

/** A v2 manifest as stored, composed from the resolved one with fresh pages (pure; for tests and tools). */
export function pageManifest(m: OutputManifestV2): {
  manifest: OutputManifestV2;
  pages: ManifestPage<object>[];
} {
  const shards = pageList("time_shards", m.time_shards);
  const records = m.records ? pageList("records", m.records.entries) : undefined;
  const manifest = pagedManifest(
    m,
    records?.pages.map((p) => p.ref) ?? [],
    { refs: shards.pages.map((p) => p.ref), tail: shards.tail },
    records?.tail,
  );
  return { manifest, pages: [...(records?.pages ?? []), ...shards.pages] };
}

export function isPagedManifest(m: OutputManifest): boolean {
  return (
    m.schema === OUTPUT_MANIFEST_V2 && (m.time_shard_pages !== undefined || m.records?.pages !== undefined)
  );
}

const PAGE_KEY = /^\.zarr-stream\/manifest\/(records|time_shards)\/(\d+)-([0-9a-f]{16})\.json$/;
const refShape = makeValidator<ManifestPageRef>(manifestPageRef, "manifest page ref");
const recordPage = makeValidator<RecordEntry[]>(
  { $id: "zarr-stream:manifest-page-records", type: "array", minItems: 1, items: recordEntry },
  "manifest page (records)",
);
const timeShardPage = makeValidator<TimeShardEntry[]>(
  { $id: "zarr-stream:manifest-page-time-shards", type: "array", minItems: 1, items: timeShardEntry },
  "manifest page (time_shards)",
);

/**
 * Checks a fetched page before use: its bytes hash to the ref's sha256 (else CorruptStore: another
 * object sits at the key), its key belongs to the list, and it is a JSON array of `count` entries of the
 * list's item schema (else SchemaError naming the key).
 */
export function validateManifestPage<L extends PagedList>(
  list: L,
  ref: ManifestPageRef,
  bytes: Uint8Array,
): EntryOf<L>[] {
  refShape(ref);
  const m = PAGE_KEY.exec(ref.key);
  if (m === null || m[1] !== list || m[3] !== ref.sha256.slice(0, 16)) {
    throw new SchemaError(
      `manifest page ref: key ${ref.key} is not a ${list} page of sha256 ${ref.sha256}`,
      "/key",
      ref.key,
    );
  }
  const actual = sha256Hex(bytes);
  if (actual !== ref.sha256) {
    throw new CorruptStore(`${ref.key}: sha256 is ${actual}, the manifest names ${ref.sha256}`, ref.key);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (err) {
    throw new SchemaError(`${ref.key}: not valid UTF-8 JSON (${(err as Error).message})`, "", ref.key);
  }
  const entries = (list === "records" ? recordPage(doc) : timeShardPage(doc)) as EntryOf<L>[];
  if (entries.length !== ref.count) {
    throw new SchemaError(
      `${ref.key}: ${entries.length} entries, the manifest names ${ref.count}`,
      "",
      ref.key,
    );
  }
  return entries;
}

/** Fetches and validates one page (validateManifestPage); the caller may cache it by sha256. */
export type ManifestPageFetch = <L extends PagedList>(list: L, ref: ManifestPageRef) => Promise<EntryOf<L>[]>;

async function resolveList<L extends PagedList>(
  list: L,
  refs: ManifestPageRef[],
  tail: EntryOf<L>[],
  fetch: ManifestPageFetch,
  pointer: string,
): Promise<EntryOf<L>[]> {
  let at = 0;
  refs.forEach((ref, i) => {
    if (ref.first !== at)
      throw new SchemaError(
        `output manifest v2: ${pointer}/${i}/first: ${ref.first}, expected ${at}`,
        `${pointer}/${i}/first`,
      );
    at += ref.count;
  });
  const pages: EntryOf<L>[][] = new Array(refs.length);
  let next = 0;
  const worker = async () => {
    while (next < refs.length) {
      const i = next++;
      pages[i] = await fetch(list, refs[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(16, refs.length) }, worker));
  const out: EntryOf<L>[] = [];
  for (const page of pages) for (const e of page) out.push(e);
  for (const e of tail) out.push(e);
  return out;
}

/**
 * The manifest with every paged list resolved (pages, in order, then the tail), checked by the v2
 * cross-field rules as a whole. An inline manifest is returned as it is. Pages come from `fetch`.
 */
export async function resolveManifestPages(
  m: OutputManifest,
  fetch: ManifestPageFetch,
): Promise<OutputManifest> {
  if (m.schema !== OUTPUT_MANIFEST_V2 || !isPagedManifest(m)) return m;
  const { time_shard_pages, ...rest } = m;
  const out: OutputManifestV2 = { ...rest };
  if (time_shard_pages)
    out.time_shards = await resolveList(
      "time_shards",
      time_shard_pages,
      m.time_shards,
      fetch,
      "/time_shard_pages",
    );
  if (m.records?.pages) {
    out.records = {
      entries: await resolveList("records", m.records.pages, m.records.entries, fetch, "/records/pages"),
    };
  }
  checkOutputManifestV2Rules(out);
  return out;
}
