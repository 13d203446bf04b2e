import { type JournalRowConfig, SchemaError, validateJournalRow } from "@zarr-stream/spec";

/** A registered journal row: `id` orders rows (the newest is the current output). */
export interface JournalRow {
  id: number;
  config: JournalRowConfig;
}

export const DEFAULT_MAX_PARTS = 64;

/** Seed 004: `journal-p{index:06d}`. */
export function outputIdentifierOf(partIndex: number): string {
  return `journal-p${String(partIndex).padStart(6, "0")}`;
}

function crossKey(ok: boolean, pointer: string, message: string, where: string): void {
  if (!ok) throw new SchemaError(`journal row ${where}: ${pointer}: ${message}`, pointer, "journal row");
}

/**
 * Schema check plus the rules a schema cannot state: the counts match their lists, the identifier
 * matches the index, and a live row carries no supersession. Used on everything read from a registry.
 */
export function checkRowConfig(value: unknown, where: string): JournalRowConfig {
  // JSON Schema has no bigint: an exact watermark beyond 2^53 is checked here and the rest by the schema.
  const wide = isObject(value) && typeof value.watermark === "bigint" ? value.watermark : undefined;
  const c = validateJournalRow(wide === undefined ? value : { ...(value as object), watermark: 0 });
  if (wide !== undefined) c.watermark = exactId(wide);
  crossKey(
    c.outputIdentifier === outputIdentifierOf(c.partIndex),
    "/outputIdentifier",
    "does not match partIndex",
    where,
  );
  crossKey(c.csvHeaderCount === c.csvHeaders.length, "/csvHeaderCount", "is not csvHeaders.length", where);
  crossKey(c.partCount === c.artefactParts.length, "/partCount", "is not artefactParts.length", where);
  crossKey(
    c.journalFormat === "csv" || c.csvHeaders.length === 0,
    "/csvHeaders",
    "must be empty for ndjson",
    where,
  );
  crossKey(
    c.deltaMd5 === undefined || isCompactionRow(c) || c.deltaMd5 === c.partMd5,
    "/deltaMd5",
    "differs from partMd5 on a row that is not a compaction",
    where,
  );
  crossKey(
    c.artefactState === "superseded" || (c.supersededAtUtc === null && c.supersededByOutputId === null),
    "/artefactState",
    "a live row carries supersession fields",
    where,
  );
  return c;
}

/**
 * A compaction row's blob is the composite of every part so far (artefactParts = [itself]); the only
 * other row whose artefactParts is itself alone is the first.
 */
export function isCompactionRow(c: JournalRowConfig): boolean {
  return c.partIndex > 0 && c.artefactParts.length === 1;
}

/**
 * What a retry is recognised by, with the row's index: the md5 of the part its run published. Rows
 * written before deltaMd5 existed fall back to partMd5, except compaction rows, whose partMd5 names the
 * composite and so says nothing about the part (undefined: no retry can be recognised by content).
 */
export function partIdentity(c: JournalRowConfig): string | undefined {
  return c.deltaMd5 ?? (isCompactionRow(c) ? undefined : c.partMd5);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A source id as exactly as it came: a bigint only when a double could not hold it. */
export function exactId(id: number | bigint): number | bigint {
  if (typeof id === "number") return id;
  const n = Number(id);
  return Number.isSafeInteger(n) ? n : id;
}
