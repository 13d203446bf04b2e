import {
  type CodecDescriptor,
  isOutputManifestV2,
  type ManifestBlob,
  OUTPUT_MANIFEST_V1,
  OUTPUT_MANIFEST_V2,
  OUTPUT_MANIFEST_V2_PAGED,
  type OutputManifest,
  type OutputManifestV1,
  type OutputManifestV2,
  type StreamSchema,
  type TimeShardEntry,
  type VariableSpec,
} from "@zarr-stream/spec";
import { indexedSummary } from "./indexed-summary.js";
import { indexedTimes } from "./indexed-times.js";
import { manifestRecords, RecordEntries } from "./record-entries.js";

/** The committed state a manifest records, as the owner keeps it between commits. */
export interface CommittedState {
  commitSeq: number;
  /** Append mode: committed records are 0 .. nCommitted-1. */
  nCommitted: number;
  /** Append mode: per time shard holding committed records (Julia: a re-committed shard replaces its entry). */
  timeShards: TimeShardEntry[];
  lastT: number | null;
  /** Indexed mode: one entry per time index. */
  entries?: RecordEntries;
  staticsCommitted: string[];
  blobs: ManifestBlob[];
  createdAt: string;
}

export interface ManifestIdentity {
  schema: StreamSchema;
  fingerprint: string;
  nWriters: number;
  regionDims: string[];
  baseUrl: string;
  /** v2 in the paged form: labelled so, and paged by ManifestCommits once a list outgrows a page. */
  paged?: boolean;
}

/** `YYYY-MM-DDTHH:MM:SSZ`, seconds, as the v1 writers stamp created_at. */
export function utcSeconds(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}

export function codecDescriptor(schema: StreamSchema): CodecDescriptor {
  switch (schema.profile) {
    case "diagnostic":
      return { id: "blosc", cname: "zstd", clevel: 5, shuffle: "shuffle" };
    case "checkpoint":
      return { id: "blosc", cname: "zstd", clevel: 7, shuffle: "shuffle" };
    case "wasm":
      return { id: "zstd", level: 5, checksum: false };
  }
}

/** Rust writes `attrs` only when non-empty; so do we, and copies keep the caller's objects out. */
function varEntry(v: VariableSpec): VariableSpec {
  const out: VariableSpec = { name: v.name, dims: [...v.dims], dtype: v.dtype };
  if (v.attrs && Object.keys(v.attrs).length > 0) out.attrs = v.attrs;
  return out;
}

function v1Fields(id: ManifestIdentity, state: CommittedState): Omit<OutputManifestV1, "schema"> {
  const { schema } = id;
  const times = indexedTimes(schema);
  const timeLength = times ? times.length : state.nCommitted;
  const shardT = schema.shard_shape[schema.time_dim]!;
  let summary = { timeShards: state.timeShards, lastT: state.lastT };
  if (times) {
    const { timeShards, lastIndex } = indexedSummary(state.entries!, shardT);
    summary = { timeShards, lastT: lastIndex < 0 ? null : state.entries!.at(lastIndex)!.t };
  }
  return {
    base_url: id.baseUrl,
    format: "zarr",
    zarr_format: 3,
    profile: schema.profile,
    codec: codecDescriptor(schema),
    time_dim: schema.time_dim,
    dims: schema.dims.map(([name, length]) => ({
      name,
      length: name === schema.time_dim ? timeLength : length,
    })),
    vars: schema.vars.map(varEntry),
    chunk_shape: { ...schema.chunk_shape },
    shard_shape: { ...schema.shard_shape },
    // Committed-state lists are never changed once made (committed-state.ts copies them), so the
    // manifest shares them rather than copying them at every commit.
    time_shards: summary.timeShards,
    last_t: summary.lastT,
    n_records: timeLength,
    created_at: state.createdAt,
  };
}

/** earthsciio/output-manifest/v1, key order as the Rust binding writes it. */
export function buildManifestV1(id: ManifestIdentity, state: CommittedState): OutputManifestV1 {
  return { schema: OUTPUT_MANIFEST_V1, ...v1Fields(id, state) };
}

/**
 * earthsciio/output-manifest/v2 (packages/spec/docs/output-manifest-v2.md), resolved: every list inline.
 * A paged store's carries the paged label, so ManifestCommits stores it paged.
 */
export function buildManifestV2(id: ManifestIdentity, state: CommittedState): OutputManifestV2 {
  const m: OutputManifestV2 = {
    schema: id.paged === true ? OUTPUT_MANIFEST_V2_PAGED : OUTPUT_MANIFEST_V2,
    ...v1Fields(id, state),
    fingerprint: id.fingerprint,
    time_mode: id.schema.time_mode === "append" ? "append" : "indexed",
    n_writers: id.nWriters,
    region_dims: [...id.regionDims],
    commit_seq: state.commitSeq,
    statics: id.schema.statics.map(varEntry),
    statics_committed: [...state.staticsCommitted].sort(),
    blobs: [...state.blobs].sort(compareBlobs),
  };
  // The state's entries are never changed once made, so the manifest shares their blocks rather than
  // copying 10^5 pointers per commit, and the manifest pager knows an unchanged block by identity.
  if (state.entries) m.records = manifestRecords(state.entries);
  return m;
}

export function compareBlobs(a: ManifestBlob, b: ManifestBlob): number {
  if (a.scope !== b.scope) return a.scope < b.scope ? -1 : 1;
  const ra = a.record ?? -1;
  const rb = b.record ?? -1;
  if (ra !== rb) return ra - rb;
  if (a.writer !== b.writer) return a.writer - b.writer;
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/**
 * Rebuilds the owner's committed state from a manifest read at resume. Entries are made afresh in the
 * writers' key order: a paged manifest's pages hold them with sorted keys, and a later manifest in the
 * seed's form prints them as every writer does.
 */
export function stateFromManifest(m: OutputManifest): CommittedState {
  const v2 = isOutputManifestV2(m) ? m : undefined;
  const entries = v2?.records?.entries.map(({ committed, t, generation }) => ({ committed, t, generation }));
  return {
    commitSeq: v2?.commit_seq ?? 0,
    nCommitted: entries ? entries.filter((e) => e.committed).length : m.n_records,
    timeShards: m.time_shards.map(({ index, t_start, t_end, n }) => ({ index, t_start, t_end, n })),
    lastT: m.last_t,
    ...(entries ? { entries: RecordEntries.from(entries) } : {}),
    staticsCommitted: [...(v2?.statics_committed ?? [])],
    blobs: (v2?.blobs ?? []).map((b) => ({ ...b })),
    createdAt: m.created_at,
  };
}

/** Keys whose values are float64 in the Julia/Rust writers: an integral value prints with ".0". */
const FLOAT_KEYS = new Set(["t_start", "t_end", "last_t", "t"]);
const FLOAT_MARK = "\u0000float:";
const PAGE_REF_KEYS = new Set(["pages", "time_shard_pages"]);
const REF_MARK = "\u0000ref:";

/** A page ref's JSON, made once per ref: an unchanged page keeps its ref object from commit to commit. */
const refTexts = new WeakMap<object, string>();
function refText(ref: object): string {
  let text = refTexts.get(ref);
  if (text === undefined) {
    text = JSON.stringify(ref);
    refTexts.set(ref, text);
  }
  return text;
}

/**
 * Serialises a manifest like serde_json's pretty printer (2-space indent, insertion order, no trailing
 * newline) so a v1 manifest is byte-compatible with the Rust binding's: JSON.stringify would print the
 * float 3600.0 as `3600`.
 */
export function serializeManifest(m: OutputManifest): Uint8Array {
  const refs: string[] = [];
  const text = JSON.stringify(
    m,
    (key, value) => {
      if (
        FLOAT_KEYS.has(key) &&
        typeof value === "number" &&
        Number.isInteger(value) &&
        Math.abs(value) < 1e16
      )
        return `${FLOAT_MARK}${value}.0`;
      // A paged manifest's refs print one to a line: pretty-printed they would double its size.
      if (PAGE_REF_KEYS.has(key) && Array.isArray(value))
        return value.map((ref: object) => `${REF_MARK}${refs.push(refText(ref)) - 1}`);
      return value;
    },
    2,
  )
    .replace(/"\\u0000float:(-?\d+\.0)"/g, "$1")
    .replace(/"\\u0000ref:(\d+)"/g, (_, i: string) => refs[Number(i)]!);
  return new TextEncoder().encode(text);
}
