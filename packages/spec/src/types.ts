/**
 * Wire types of the streaming writer contract v2 (seed 000). Every type here is exactly its JSON wire
 * form (snake_case), so a document read from a store, once validated, is used as it is.
 */

/** Dtypes a streaming variable or static may have (seed §2). */
export type StreamDType = "float64" | "float32" | "int32" | "int64" | "uint8";
/** Dtypes a reader accepts (Julia keeps uint32/uint64). */
export type DType = StreamDType | "uint32" | "uint64";

export type Profile = "diagnostic" | "checkpoint" | "wasm";

export type Attrs = Record<string, unknown>;

export interface VariableSpec {
  name: string;
  dims: string[];
  dtype: StreamDType;
  attrs?: Attrs;
}

/** A coordinate array of a non-time dim (values), or attributes for the time coordinate (no values). */
export interface CoordSpec {
  values?: number[];
  attrs?: Attrs;
}

export type TimeMode = "append" | { indexed: { times: number[] } };

export interface StreamSchema {
  /** [name, length] in schema order; the time dim's length is ignored (0 in append, n_records in indexed). */
  dims: [string, number][];
  time_dim: string;
  time_mode: TimeMode;
  vars: VariableSpec[];
  statics: VariableSpec[];
  chunk_shape: Record<string, number>;
  shard_shape: Record<string, number>;
  profile: Profile;
  coords?: Record<string, CoordSpec>;
  attrs?: Attrs;
}

/** {dim: [start, stop)} over non-time dims, 0-based, half-open; omitted dims are full extent. */
export type Region = Record<string, [number, number]>;

export type Role =
  | { kind: "single" }
  | { kind: "owner"; nWriters: number }
  | { kind: "contributor"; id: number };

export type BlobScope = "static" | { record: number };

export const COMMIT_TOKEN_SCHEMA = "earthsciio/commit-token/v1";
export const OUTPUT_MANIFEST_V1 = "earthsciio/output-manifest/v1";
export const OUTPUT_MANIFEST_V2 = "earthsciio/output-manifest/v2";
/**
 * A v2 manifest whose long lists may live in pages (docs/manifest-pages.md). Its own label, outside the
 * seed's `earthsciio/` names, so a reader that pins the seed's labels refuses it instead of reading a
 * list's tail as the whole list; resolved, it is a v2 manifest field for field.
 */
export const OUTPUT_MANIFEST_V2_PAGED = "zarr-stream/output-manifest/v2-paged";

export interface TokenRecord {
  index: number;
  t: number;
}

/** A blob reference in a token: `record` is present exactly when scope is "record". */
export interface TokenBlob {
  scope: "static" | "record";
  record?: number;
  key: string;
}

/** Seed §5.2. Lists are sorted: records by index, statics by name, blobs by (scope, record, key), objects. */
export interface CommitToken {
  schema: typeof COMMIT_TOKEN_SCHEMA;
  writer: number;
  region: Region;
  fingerprint: string;
  records: TokenRecord[];
  statics: string[];
  blobs: TokenBlob[];
  objects: string[];
}

export type CodecDescriptor =
  | { id: "blosc"; cname: "zstd"; clevel: 5 | 7; shuffle: "shuffle" }
  | { id: "zstd"; level: 5; checksum: false };

export interface ManifestDim {
  name: string;
  length: number;
}

export interface TimeShardEntry {
  index: number;
  t_start: number;
  t_end: number;
  n: number;
}

/** earthsciio/output-manifest/v1 in the Julia/Rust spelling (reference facts). */
export interface OutputManifestV1 {
  schema: typeof OUTPUT_MANIFEST_V1;
  base_url: string;
  format: "zarr";
  zarr_format: 3;
  profile: Profile;
  codec: CodecDescriptor;
  time_dim: string;
  dims: ManifestDim[];
  vars: VariableSpec[];
  chunk_shape: Record<string, number>;
  shard_shape: Record<string, number>;
  time_shards: TimeShardEntry[];
  last_t: number | null;
  n_records: number;
  created_at: string;
}

/** Per-record state of an indexed store. */
export interface RecordEntry {
  committed: boolean;
  t: number;
  generation: number;
}

export interface ManifestBlob {
  scope: "static" | "record";
  record?: number;
  writer: number;
  key: string;
}

/**
 * earthsciio/output-manifest/v2: every v1 field plus the fields below (decision recorded in
 * packages/spec/docs/output-manifest-v2.md). In append mode `records` is absent so the manifest
 * grows with time shards, not records. Labelled OUTPUT_MANIFEST_V2_PAGED, the same document in the
 * paged form: the label is the store's form, kept by every writer that resumes it, and a paged
 * manifest resolved (its lists read back from their pages) keeps it.
 */
export interface OutputManifestV2 extends Omit<OutputManifestV1, "schema"> {
  schema: typeof OUTPUT_MANIFEST_V2 | typeof OUTPUT_MANIFEST_V2_PAGED;
  fingerprint: string;
  time_mode: "append" | "indexed";
  n_writers: number;
  region_dims: string[];
  commit_seq: number;
  statics: VariableSpec[];
  statics_committed: string[];
  /**
   * Indexed mode. In a paged manifest (OUTPUT_MANIFEST_V2_PAGED) as stored, `pages` holds every entry (or `page_index` the index
   * pages holding the refs of the pages that do), `entries` is empty and `time_shards` is empty too:
   * readers derive it from the entries (docs/manifest-pages.md).
   */
  records?: { pages?: ManifestPageRef[]; page_index?: ManifestPageRef[]; entries: RecordEntry[] };
  blobs: ManifestBlob[];
  /** Append mode, in a paged manifest as stored: the sealed pages of `time_shards`, which then holds the tail. */
  time_shard_pages?: ManifestPageRef[];
}

/**
 * A sealed page of a paged manifest list (docs/manifest-pages.md): entries `first .. first+count-1` of
 * the list, stored immutable at `.zarr-stream/manifest/<list>/<sha256>.json`, whose bytes hash to
 * `sha256` (lowercase hex).
 */
export interface ManifestPageRef {
  first: number;
  count: number;
  sha256: string;
}

export type OutputManifest = OutputManifestV1 | OutputManifestV2;

/** Whether `m` is a v2 manifest, in the seed's form or the paged one. */
export function isOutputManifestV2(m: OutputManifest): m is OutputManifestV2 {
  return m.schema === OUTPUT_MANIFEST_V2 || m.schema === OUTPUT_MANIFEST_V2_PAGED;
}

/** Whether `m` is in the paged form: its label says so, whether or not a list has outgrown a page yet. */
export function isPagedForm(m: OutputManifest): boolean {
  return m.schema === OUTPUT_MANIFEST_V2_PAGED;
}

export type TypedArray =
  | Float64Array
  | Float32Array
  | Int32Array
  | BigInt64Array
  | Uint8Array
  | Uint32Array
  | BigUint64Array;

/** Row-major arrays in region shape, time dim removed, keyed by variable name. */
export type RecordArrays = Record<
  string,
  Float64Array | Float32Array | Int32Array | BigInt64Array | Uint8Array
>;

export interface CommitReceipt {
  commit_seq: number;
  /** Committed record count (append) or committed-record count (indexed). */
  n_committed: number;
  manifest: OutputManifestV2;
}
