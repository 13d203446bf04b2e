import {
  blobRef,
  fingerprint,
  nodeName,
  nonNegativeInt,
  positiveInt,
  profile,
  readerDType,
  shape,
  streamDType,
  variableSpec,
} from "./common.js";

const codec = {
  oneOf: [
    {
      type: "object",
      properties: {
        id: { const: "blosc" },
        cname: { const: "zstd" },
        clevel: { enum: [5, 7] },
        shuffle: { const: "shuffle" },
      },
      required: ["id", "cname", "clevel", "shuffle"],
      additionalProperties: false,
    },
    {
      type: "object",
      properties: { id: { const: "zstd" }, level: { const: 5 }, checksum: { const: false } },
      required: ["id", "level", "checksum"],
      additionalProperties: false,
    },
  ],
} as const;

/** One `time_shards` item: a time shard holding committed records. */
export const timeShardEntry = {
  type: "object",
  properties: {
    index: nonNegativeInt,
    t_start: { type: "number" },
    t_end: { type: "number" },
    n: positiveInt,
  },
  required: ["index", "t_start", "t_end", "n"],
  additionalProperties: false,
} as const;

/** One `records.entries` item: an indexed store's per-record state. */
export const recordEntry = {
  type: "object",
  properties: { committed: { type: "boolean" }, t: { type: "number" }, generation: nonNegativeInt },
  required: ["committed", "t", "generation"],
  additionalProperties: false,
} as const;

/**
 * A sealed page of a paged list (docs/manifest-pages.md): entries `first .. first+count-1` of the list,
 * stored at `.zarr-stream/manifest/<list>/<sha256>.json`, whose bytes hash to `sha256`.
 */
export const manifestPageRef = {
  type: "object",
  properties: {
    first: nonNegativeInt,
    count: positiveInt,
    sha256: { type: "string", pattern: "^[0-9a-f]{64}$" },
  },
  required: ["first", "count", "sha256"],
  additionalProperties: false,
} as const;

function v1Properties(dtype: object) {
  return {
    base_url: { type: "string" },
    format: { const: "zarr" },
    zarr_format: { const: 3 },
    profile,
    codec,
    time_dim: nodeName,
    dims: {
      type: "array",
      minItems: 1,
      items: {
        type: "object",
        properties: { name: nodeName, length: nonNegativeInt },
        required: ["name", "length"],
        additionalProperties: false,
      },
    },
    vars: { type: "array", items: variableSpec(dtype) },
    chunk_shape: shape,
    shard_shape: shape,
    time_shards: { type: "array", items: timeShardEntry },
    last_t: { anyOf: [{ type: "number" }, { type: "null" }] },
    n_records: nonNegativeInt,
    created_at: { type: "string", pattern: "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$" },
  } as const;
}

const V1_REQUIRED = [
  "schema",
  "base_url",
  "format",
  "zarr_format",
  "profile",
  "codec",
  "time_dim",
  "dims",
  "vars",
  "chunk_shape",
  "shard_shape",
  "time_shards",
  "last_t",
  "n_records",
  "created_at",
] as const;

/** earthsciio/output-manifest/v1 in the Julia/Rust spelling; Julia's uint32/uint64 readers' dtypes allowed. */
export const outputManifestV1JsonSchema = {
  $id: "zarr-stream:output-manifest-v1",
  type: "object",
  properties: { schema: { const: "earthsciio/output-manifest/v1" }, ...v1Properties(readerDType) },
  required: V1_REQUIRED,
  additionalProperties: false,
} as const;

const V2_REQUIRED = [
  ...V1_REQUIRED,
  "fingerprint",
  "time_mode",
  "n_writers",
  "region_dims",
  "commit_seq",
  "statics",
  "statics_committed",
  "blobs",
] as const;

const v2Properties = {
  ...v1Properties(streamDType),
  fingerprint,
  time_mode: { enum: ["append", "indexed"] },
  n_writers: positiveInt,
  region_dims: { type: "array", items: nodeName },
  commit_seq: nonNegativeInt,
  statics: { type: "array", items: variableSpec(streamDType) },
  statics_committed: { type: "array", items: nodeName },
  blobs: { type: "array", items: blobRef(true) },
} as const;

/**
 * earthsciio/output-manifest/v2: v1 plus the multi-writer state (docs/output-manifest-v2.md), every list
 * inline, as seed 000 §8.2 has it. No page fields: a document with them is the paged form, which has its
 * own label.
 */
export const outputManifestV2JsonSchema = {
  $id: "zarr-stream:output-manifest-v2",
  type: "object",
  properties: {
    schema: { const: "earthsciio/output-manifest/v2" },
    ...v2Properties,
    records: {
      type: "object",
      properties: { entries: { type: "array", items: recordEntry } },
      required: ["entries"],
      additionalProperties: false,
    },
  },
  required: V2_REQUIRED,
  additionalProperties: false,
} as const;

/**
 * zarr-stream/output-manifest/v2-paged (docs/manifest-pages.md): the v2 fields, plus the refs of the
 * pages that hold a list once it outgrows a page (`records.pages` or `records.page_index` in indexed
 * mode, `time_shard_pages` in append mode). A list that fits a page stays inline.
 */
export const outputManifestV2PagedJsonSchema = {
  $id: "zarr-stream:output-manifest-v2-paged",
  type: "object",
  properties: {
    schema: { const: "zarr-stream/output-manifest/v2-paged" },
    ...v2Properties,
    records: {
      type: "object",
      properties: {
        pages: { type: "array", minItems: 1, items: manifestPageRef },
        page_index: { type: "array", minItems: 1, items: manifestPageRef },
        entries: { type: "array", items: recordEntry },
      },
      required: ["entries"],
      additionalProperties: false,
    },
    time_shard_pages: { type: "array", minItems: 1, items: manifestPageRef },
  },
  required: V2_REQUIRED,
  additionalProperties: false,
} as const;
