import type { Store } from "@zarr-stream/store";
import type { JournalRegistry } from "./registry.js";
import { planRetention, type RetentionPlan } from "./retention.js";

/**
 * Carries out planRetention: rows are removed first (in one transaction), then their blobs, so a crash
 * in between leaves orphan blobs, never a row whose blob is gone. A blob still referenced by the
 * current output is never deleted.
 */
export async function pruneJournal(
  registry: JournalRegistry,
  store: Store,
  options: { cutoff: Date | string; dryRun?: boolean },
): Promise<RetentionPlan> {
  const plan = planRetention(await registry.rows(), options.cutoff);
  if (options.dryRun || plan.prune.length === 0) return plan;
  const protectedKeys = new Set(plan.keep.flatMap(({ row }) => [row.config.partKey]));
  const current = plan.keep.find((k) => k.reason === "current");
  for (const key of current?.row.config.artefactParts ?? []) protectedKeys.add(key);
  await registry.remove(plan.prune.map((r) => r.config.outputIdentifier));
  for (const row of plan.prune) {
    if (!protectedKeys.has(row.config.partKey)) await store.delete(row.config.partKey);
  }
  return plan;
}
