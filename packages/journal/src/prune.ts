import type { Store } from "@zarr-stream/store";
import type { JournalRegistry } from "./registry.js";
import { planRetention, type RetentionPlan } from "./retention.js";
import type { JournalRow } from "./row.js";

export interface PruneResult extends RetentionPlan {
  /**
   * Blobs under the journal's key prefixes that no row references and none can come to reference:
   * removed (listed only, on a dry run).
   */
  orphans: string[];
}

/** A part blob's name as publishPart writes it: the plain key, or the one named by its md5. */
const PART_BLOB = /^journal-p(\d{6,})(?:-[0-9a-f]{16})?\.(?:csv|ndjson)$/;

/**
 * Part blobs that no row references, at an index the journal has passed. A publisher writes its blob
 * before it registers the row, so an unreferenced blob above the head may be a publish in flight; one
 * at or below the head's index never will be referenced, because registering a row there needs the
 * compare-and-swap on an older head to succeed. Such blobs come from a publisher that crashed (or lost a
 * race) after writing, then retried with other bytes under another key, and from a prune that crashed
 * between removing rows and their blobs.
 */
async function findOrphans(store: Store, rows: readonly JournalRow[]): Promise<string[]> {
  const head = rows.reduce<JournalRow | undefined>(
    (a, r) => (a === undefined || r.id > a.id ? r : a),
    undefined,
  );
  if (head === undefined) return [];
  // Blobs of the rows being pruned count as referenced: the prune itself deletes them.
  const referenced = new Set(rows.flatMap((r) => [r.config.partKey, ...r.config.artefactParts]));
  const prefixes = new Set(
    rows
      .flatMap((r) => [r.config.partKey, ...r.config.artefactParts])
      .map((k) => k.slice(0, k.lastIndexOf("/") + 1)),
  );
  const orphans: string[] = [];
  for (const prefix of prefixes) {
    for (const key of await store.list(prefix)) {
      const m = PART_BLOB.exec(key.slice(prefix.length));
      if (m === null || referenced.has(key)) continue;
      if (Number(m[1]) <= head.config.partIndex) orphans.push(key);
    }
  }
  return orphans.sort();
}

/**
 * Carries out planRetention: rows are removed first (in one transaction), then their blobs, so a crash
 * in between leaves orphan blobs, never a row whose blob is gone. A blob still referenced by the current
 * output is never deleted. Orphan blobs (findOrphans) are removed last, including those an earlier
 * crash left.
 */
export async function pruneJournal(
  registry: JournalRegistry,
  store: Store,
  options: { cutoff: Date | string; dryRun?: boolean },
): Promise<PruneResult> {
  // The rows are read before the store is listed: a blob written after the read belongs to an index
  // beyond this head, which findOrphans leaves alone.
  const rows = await registry.rows();
  const plan = planRetention(rows, options.cutoff);
  const kept = plan.keep.map((k) => k.row);
  const orphans = await findOrphans(store, rows);
  if (options.dryRun) return { ...plan, orphans };
  if (plan.prune.length > 0) {
    const protectedKeys = new Set(kept.map((row) => row.config.partKey));
    const current = plan.keep.find((k) => k.reason === "current");
    for (const key of current?.row.config.artefactParts ?? []) protectedKeys.add(key);
    await registry.remove(plan.prune.map((r) => r.config.outputIdentifier));
    for (const row of plan.prune) {
      if (!protectedKeys.has(row.config.partKey)) await store.delete(row.config.partKey);
    }
  }
  for (const key of orphans) await store.delete(key);
  return { ...plan, orphans };
}
