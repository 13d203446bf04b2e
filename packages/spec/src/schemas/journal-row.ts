import * as precompiled from "#precompiled-validators";
import { makeValidator } from "../validate.js";

/** Seed 004: a journal part is CSV (CRLF lines) or NDJSON (LF lines); never heatx. */
export type JournalFormat = "csv" | "ndjson";

/**
 * Seed 004 row configuration: flat, JSON-serialisable keys so a registry can patch one key without
 * rewriting nested documents. Every row is the cumulative head: its blob is the new part, its
 * configuration names every part that composes the current state. Parts never carry `start` or `len`
 * (invariant 6), which the closed schema enforces.
 */
export interface JournalRowConfig {
  /** `journal-p{partIndex:06d}`; registration is idempotent on it. */
  outputIdentifier: string;
  journalFormat: JournalFormat;
  partIndex: number;
  /** Store key of this row's own part blob. */
  partKey: string;
  partSize: number;
  /** Lower-case hex md5 of the part blob. */
  partMd5: string;
  /**
   * Lower-case hex md5 of the part this run published, as stored: the row's identity for retries. It is
   * partMd5 except on a compaction row, whose blob is the composite. Absent on rows written before it.
   */
  deltaMd5?: string;
  /** Union of every part header so far, in order; empty for NDJSON and for a CSV journal that decoded nothing. */
  csvHeaders: string[];
  csvHeaderCount: number;
  /** Ordered blob keys whose composition is the current state. */
  artefactParts: string[];
  partCount: number;
  /** Compaction threshold; 0 disables compaction. */
  maxParts: number;
  journalCompactionCount: number;
  /** Highest source id covered by this state, or null before the first listing; a bigint beyond 2^53. */
  watermark: number | bigint | null;
  artefactState: "live" | "superseded";
  retentionEligible: boolean;
  supersededAtUtc: string | null;
  supersededReason: string | null;
  supersededByOutputId: string | null;
  createdAtUtc: string;
}

const isoUtc = "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$";
const count = { type: "integer", minimum: 0, maximum: Number.MAX_SAFE_INTEGER };
const nullable = (schema: object) => ({ anyOf: [schema, { type: "null" }] });
const nullableString = nullable({ type: "string", minLength: 1 });

export const JOURNAL_ROW_SCHEMA = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  $id: "zarr-stream:journal-row",
  title: "journal row configuration (seed 004)",
  type: "object",
  additionalProperties: false,
  required: [
    "outputIdentifier",
    "journalFormat",
    "partIndex",
    "partKey",
    "partSize",
    "partMd5",
    "csvHeaders",
    "csvHeaderCount",
    "artefactParts",
    "partCount",
    "maxParts",
    "journalCompactionCount",
    "watermark",
    "artefactState",
    "retentionEligible",
    "supersededAtUtc",
    "supersededReason",
    "supersededByOutputId",
    "createdAtUtc",
  ],
  properties: {
    outputIdentifier: { type: "string", pattern: "^journal-p\\d{6,}$" },
    journalFormat: { enum: ["csv", "ndjson"] },
    partIndex: count,
    partKey: { type: "string", minLength: 1 },
    partSize: count,
    partMd5: { type: "string", pattern: "^[0-9a-f]{32}$" },
    deltaMd5: { type: "string", pattern: "^[0-9a-f]{32}$" },
    csvHeaders: { type: "array", items: { type: "string" } },
    csvHeaderCount: count,
    artefactParts: { type: "array", minItems: 1, items: { type: "string", minLength: 1 } },
    partCount: { type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
    maxParts: count,
    journalCompactionCount: count,
    watermark: nullable({ type: "number" }),
    artefactState: { enum: ["live", "superseded"] },
    retentionEligible: { type: "boolean" },
    supersededAtUtc: nullable({ type: "string", pattern: isoUtc }),
    supersededReason: nullableString,
    supersededByOutputId: nullable({ type: "string", pattern: "^journal-p\\d{6,}$" }),
    createdAtUtc: { type: "string", pattern: isoUtc },
  },
} as const;

/**
 * Checks a row configuration against JOURNAL_ROW_SCHEMA (shape only; the journal package checks the
 * cross-key rules such as csvHeaderCount = csvHeaders.length). Throws SchemaError.
 */
export const validateJournalRow = /* @__PURE__ */ makeValidator<JournalRowConfig>(
  JOURNAL_ROW_SCHEMA,
  "journal row",
  precompiled.journalRow,
);
