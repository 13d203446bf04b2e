import { JournalError } from "./errors.js";
import type { JournalRow } from "./row.js";

export type KeepReason = "current" | "referenced-by-current" | "live" | "too-recent";

export interface RetentionPlan {
  /** Rows (and their part blobs) that may be deleted. */
  prune: JournalRow[];
  keep: { row: JournalRow; reason: KeepReason }[];
}

export function parseCutoff(cutoff: Date | string): Date {
  const date = cutoff instanceof Date ? cutoff : new Date(cutoff);
  if (Number.isNaN(date.getTime()))
    throw new JournalError(`cutoff ${JSON.stringify(String(cutoff))} is not a date`, "argument");
  return date;
}

function newest(rows: readonly JournalRow[]): JournalRow | undefined {
  return rows.reduce<JournalRow | undefined>((a, r) => (a === undefined || r.id > a.id ? r : a), undefined);
}

/**
 * Seed 004 retention: the current output (newest row) and every row whose blob its artefactParts
 * reference are never pruned, even when marked superseded by mistake; a superseded row is due only when
 * (supersededAtUtc ?? createdAtUtc) <= cutoff, so a consumer that claimed it just before may still stream it.
 */
export function planRetention(rows: readonly JournalRow[], cutoff: Date | string): RetentionPlan {
  const at = parseCutoff(cutoff).getTime();
  const current = newest(rows);
  const referenced = new Set(current?.config.artefactParts ?? []);
  const plan: RetentionPlan = { prune: [], keep: [] };
  for (const row of rows) {
    const c = row.config;
    let reason: KeepReason | undefined;
    if (row === current) reason = "current";
    else if (referenced.has(c.partKey)) reason = "referenced-by-current";
    else if (c.artefactState !== "superseded") reason = "live";
    else if (Date.parse(c.supersededAtUtc ?? c.createdAtUtc) > at) reason = "too-recent";
    if (reason === undefined) plan.prune.push(row);
    else plan.keep.push({ row, reason });
  }
  return plan;
}

/**
 * Seed 004 archive: a session archive keeps the keeper row and every row its configuration references
 * (artefactParts), and may archive the rest.
 */
export function planArchive(
  rows: readonly JournalRow[],
  keeperOutputId: string,
): { keep: JournalRow[]; archive: JournalRow[] } {
  const keeper = rows.find((r) => r.config.outputIdentifier === keeperOutputId);
  if (!keeper) throw new JournalError(`archive keeper ${keeperOutputId} is not registered`, "argument");
  const referenced = new Set(keeper.config.artefactParts);
  const keep = rows.filter((r) => r === keeper || referenced.has(r.config.partKey));
  return { keep, archive: rows.filter((r) => !keep.includes(r)) };
}
