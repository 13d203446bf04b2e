/**
 * Wire formats of the v2 write conformance suite (seed 000 §10): the corpus other language bindings run
 * (earthsciio/write-conformance-spec/v2) and the dump every reader driver produces from a store
 * (earthsciio/write-v2-dump/v1). Dumps carry array bytes, never float text, so comparison is bitwise.
 */
import * as precompiled from "#precompiled-validators";
import type { StreamDType, StreamSchema, VariableSpec } from "../types.js";
import { makeValidator } from "../validate.js";
import {
  blobKey,
  nodeName,
  nonNegativeInt,
  positiveInt,
  readerDType,
  region,
  streamDType,
  variableSpec,
} from "./common.js";
import { streamSchemaJsonSchema } from "./stream-schema.js";

export const CONFORMANCE_CORPUS_SCHEMA = "earthsciio/write-conformance-spec/v2";
export const CONFORMANCE_DUMP_SCHEMA = "earthsciio/write-v2-dump/v1";

export type ConformanceErrorName = "RegionNotShardAligned" | "CommitError" | "Error";

/** A role in corpus spelling: `{"single": true}`, `{"owner": n}`, `{"contributor": id}` (id >= 1: the owner is writer 0). */
export type CorpusRole = { single: true } | { owner: number } | { contributor: number };

/** A blob scope in corpus and dump spelling. */
export type CorpusBlobScope = "static" | { record: number };

export type CorpusVariable = VariableSpec & { seed: number };

/** A StreamSchema whose vars and statics carry a generator seed (seed §10). */
export type CorpusSchema = Omit<StreamSchema, "vars" | "statics"> & {
  vars: CorpusVariable[];
  statics: CorpusVariable[];
};

interface OpBase {
  writer: string;
  expect_error?: ConformanceErrorName;
}

export type CorpusOp = OpBase &
  (
    | {
        op: "create";
        role: CorpusRole;
        region?: Record<string, [number, number]>;
        /** The store keeps its manifest in the paged form, zarr-stream/output-manifest/v2-paged. */
        manifest_pages?: boolean;
      }
    | { op: "join"; role: CorpusRole; region?: Record<string, [number, number]> }
    | { op: "resume"; role: CorpusRole; region?: Record<string, [number, number]>; at?: number | null }
    | { op: "write_record"; t: number; r: number; vars?: string[] }
    | { op: "write_record_at"; index: number; r: number; t?: number; vars?: string[] }
    | { op: "write_static"; name: string }
    | { op: "write_blob"; scope: CorpusBlobScope; key: string; hex: string }
    | { op: "flush"; token?: string }
    | { op: "commit"; tokens: string[] }
    | { op: "invalidate"; indices: number[] }
    | { op: "invalidate_statics"; names: string[] }
    | { op: "close"; tokens?: string[] }
    | { op: "drop" }
  );

export interface ExpectedRecord {
  index: number;
  /** Generator record whose values the committed record holds. */
  r: number;
  /**
   * Append mode: optional. When absent it is the t of the case's write_record ops (those without
   * expect_error) that write generator record r, which must agree; when present it must be one of them.
   * Indexed mode takes times[index].
   */
  t?: number;
  /** Indexed mode: how many times the record has been committed. */
  generation?: number;
}

export interface ExpectedBlob {
  scope: CorpusBlobScope;
  writer: number;
  key: string;
  hex: string;
}

export interface CaseExpectation {
  manifest_schema:
    | "earthsciio/output-manifest/v1"
    | "earthsciio/output-manifest/v2"
    | "zarr-stream/output-manifest/v2-paged";
  /** null for a v1 store, which has no commit_seq. */
  commit_seq: number | null;
  records: ExpectedRecord[];
  statics: string[];
  blobs: ExpectedBlob[];
  /**
   * The output manifest the store must hold, field by field, with `created_at` and `base_url` left out
   * (a timestamp, and where the driver put the store). A dump must then carry the manifest it read.
   */
  manifest?: Record<string, unknown>;
}

/** Manifest fields an expected manifest leaves out: they differ run to run. */
export const MANIFEST_FIELDS_NOT_COMPARED = ["created_at", "base_url"] as const;

export interface ConformanceCase {
  name: string;
  description?: string;
  schema: CorpusSchema;
  ops: CorpusOp[];
  expect: CaseExpectation;
}

export interface ConformanceCorpus {
  schema: typeof CONFORMANCE_CORPUS_SCHEMA;
  description?: string;
  cases: ConformanceCase[];
}

/** One array in a dump: little-endian C-order bytes, or the error the reader met reading it. */
export type DumpArray = { dtype: StreamDType; shape: number[]; data_b64: string } | { error: string };

export interface DumpRecord {
  index: number;
  t: number;
  generation?: number;
  vars: Record<string, DumpArray>;
}

export interface ConformanceDump {
  schema: typeof CONFORMANCE_DUMP_SCHEMA;
  case: string;
  /** The binding that wrote the store (e.g. "zarr-stream-ts"). */
  writer: string;
  /** The reader that produced this dump (e.g. "zarr-stream-ts", "zarrita", "zarr-python", "tensorstore"). */
  reader: string;
  manifest_schema: string;
  commit_seq: number | null;
  records: DumpRecord[];
  statics: Record<string, DumpArray>;
  blobs: ExpectedBlob[];
  /** output_manifest.json as the reader read it (plain JSON), for cases that expect a manifest. */
  manifest?: Record<string, unknown>;
}

// A nested $id would register the stream schema a second time under the same name.
const { $id: _streamSchemaId, ...streamSchemaBody } = streamSchemaJsonSchema;

const caseName = { type: "string", pattern: "^[A-Za-z0-9._-]+$" } as const;
const hex = { type: "string", pattern: "^([0-9a-f]{2})*$" } as const;
const errorName = { enum: ["RegionNotShardAligned", "CommitError", "Error"] } as const;
const blobScope = {
  oneOf: [
    { const: "static" },
    {
      type: "object",
      properties: { record: nonNegativeInt },
      required: ["record"],
      additionalProperties: false,
    },
  ],
} as const;
const corpusRole = {
  oneOf: [
    {
      type: "object",
      properties: { single: { const: true } },
      required: ["single"],
      additionalProperties: false,
    },
    { type: "object", properties: { owner: positiveInt }, required: ["owner"], additionalProperties: false },
    {
      type: "object",
      properties: { contributor: positiveInt },
      required: ["contributor"],
      additionalProperties: false,
    },
  ],
} as const;
const seededVariable = (() => {
  const base = variableSpec(streamDType);
  return {
    ...base,
    properties: { ...base.properties, seed: { type: "integer" } },
    required: [...base.required, "seed"],
  };
})();
const names = { type: "array", items: { type: "string", minLength: 1 } } as const;
const indices = { type: "array", items: nonNegativeInt } as const;

/** The fields each op takes besides op, writer and expect_error; a field listed as required must be there. */
const OP_FIELDS: Record<string, { props: Record<string, object>; required: string[] }> = {
  create: {
    props: {
      role: corpusRole,
      region,
      manifest_pages: {
        type: "boolean",
        description:
          "true: the store is created in the paged manifest form (zarr-stream/output-manifest/v2-paged), an extension of zarr-stream's; a binding without it skips the case.",
      },
    },
    required: ["role"],
  },
  join: { props: { role: corpusRole, region }, required: ["role"] },
  resume: { props: { role: corpusRole, region, at: { type: ["number", "null"] } }, required: ["role"] },
  write_record: { props: { t: { type: "number" }, r: nonNegativeInt, vars: names }, required: ["t", "r"] },
  write_record_at: {
    props: { index: nonNegativeInt, r: nonNegativeInt, t: { type: "number" }, vars: names },
    required: ["index", "r"],
  },
  write_static: { props: { name: nodeName }, required: ["name"] },
  write_blob: {
    props: { scope: blobScope, key: { type: "string" }, hex },
    required: ["scope", "key", "hex"],
  },
  flush: { props: { token: { type: "string", minLength: 1 } }, required: [] },
  commit: { props: { tokens: names }, required: ["tokens"] },
  invalidate: { props: { indices }, required: ["indices"] },
  invalidate_statics: { props: { names }, required: ["names"] },
  close: { props: { tokens: names }, required: [] },
  drop: { props: {}, required: [] },
};

const corpusOp = {
  type: "object",
  properties: {
    op: { enum: Object.keys(OP_FIELDS) },
    writer: { type: "string", minLength: 1 },
    expect_error: errorName,
  },
  required: ["op", "writer"],
  allOf: Object.entries(OP_FIELDS).map(([op, { props, required }]) => ({
    if: { type: "object", properties: { op: { const: op } }, required: ["op"] },
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema keyword
    then: {
      type: "object",
      properties: { op: true, writer: true, expect_error: true, ...props },
      required,
      additionalProperties: false,
    },
  })),
};

const expectedBlob = {
  type: "object",
  properties: { scope: blobScope, writer: nonNegativeInt, key: blobKey, hex },
  required: ["scope", "writer", "key", "hex"],
  additionalProperties: false,
} as const;

const manifestLabel = {
  enum: [
    "earthsciio/output-manifest/v1",
    "earthsciio/output-manifest/v2",
    "zarr-stream/output-manifest/v2-paged",
  ],
} as const;
const commitSeq = { oneOf: [nonNegativeInt, { type: "null" }] } as const;

export const conformanceCorpusJsonSchema = {
  $id: "zarr-stream:write-conformance-spec-v2",
  type: "object",
  properties: {
    schema: { const: CONFORMANCE_CORPUS_SCHEMA },
    description: { type: "string" },
    cases: {
      type: "array",
      items: {
        type: "object",
        properties: {
          name: caseName,
          description: { type: "string" },
          schema: {
            ...streamSchemaBody,
            properties: {
              ...streamSchemaJsonSchema.properties,
              vars: { type: "array", items: seededVariable },
              statics: { type: "array", items: seededVariable },
            },
          },
          ops: { type: "array", items: corpusOp },
          expect: {
            type: "object",
            properties: {
              manifest_schema: manifestLabel,
              commit_seq: commitSeq,
              records: {
                type: "array",
                items: {
                  type: "object",
                  properties: {
                    index: nonNegativeInt,
                    r: nonNegativeInt,
                    t: {
                      type: "number",
                      description:
                        "Optional (seed §10 lists only index and r). Append mode: when absent, the t of the case's write_record ops without expect_error that write generator record r (they must agree); when present, it must be one of them. Indexed mode: times[index].",
                    },
                    generation: nonNegativeInt,
                  },
                  required: ["index", "r"],
                  additionalProperties: false,
                },
              },
              statics: { type: "array", items: nodeName },
              blobs: { type: "array", items: expectedBlob },
              manifest: {
                type: "object",
                description:
                  "The output manifest the store must hold, compared field by field; created_at and base_url are left out (they differ run to run).",
                propertyNames: { not: { enum: ["created_at", "base_url"] } },
              },
            },
            required: ["manifest_schema", "commit_seq", "records", "statics", "blobs"],
            additionalProperties: false,
          },
        },
        required: ["name", "schema", "ops", "expect"],
        additionalProperties: false,
      },
    },
  },
  required: ["schema", "cases"],
  additionalProperties: false,
};

const dumpArray = {
  oneOf: [
    {
      type: "object",
      properties: {
        dtype: readerDType,
        shape: { type: "array", items: nonNegativeInt },
        data_b64: { type: "string", pattern: "^[A-Za-z0-9+/]*={0,2}$" },
      },
      required: ["dtype", "shape", "data_b64"],
      additionalProperties: false,
    },
    {
      type: "object",
      properties: { error: { type: "string" } },
      required: ["error"],
      additionalProperties: false,
    },
  ],
} as const;

export const conformanceDumpJsonSchema = {
  $id: "zarr-stream:write-v2-dump-v1",
  type: "object",
  properties: {
    schema: { const: CONFORMANCE_DUMP_SCHEMA },
    case: caseName,
    writer: { type: "string" },
    reader: { type: "string" },
    manifest_schema: { type: "string" },
    commit_seq: commitSeq,
    records: {
      type: "array",
      items: {
        type: "object",
        properties: {
          index: nonNegativeInt,
          t: { type: "number" },
          generation: nonNegativeInt,
          vars: { type: "object", propertyNames: nodeName, additionalProperties: dumpArray },
        },
        required: ["index", "t", "vars"],
        additionalProperties: false,
      },
    },
    statics: { type: "object", propertyNames: nodeName, additionalProperties: dumpArray },
    blobs: { type: "array", items: expectedBlob },
    manifest: { type: "object", description: "output_manifest.json as the reader read it (plain JSON)" },
  },
  required: [
    "schema",
    "case",
    "writer",
    "reader",
    "manifest_schema",
    "commit_seq",
    "records",
    "statics",
    "blobs",
  ],
  additionalProperties: false,
} as const;

/** Structural check of a corpus document; semantic checks (seeds, times, names) are the driver's. */
export const validateConformanceCorpus = /* @__PURE__ */ makeValidator<ConformanceCorpus>(
  conformanceCorpusJsonSchema,
  CONFORMANCE_CORPUS_SCHEMA,
  precompiled.writeConformanceSpecV2,
);

export const validateConformanceDump = /* @__PURE__ */ makeValidator<ConformanceDump>(
  conformanceDumpJsonSchema,
  CONFORMANCE_DUMP_SCHEMA,
  precompiled.writeV2DumpV1,
);
