import { JournalError } from "./errors.js";
import type { JournalRegistry } from "./registry.js";
import { exactId } from "./row.js";

/** Seed 004: coverage of a facet-filtered listing over its SinceId range, before exclusion. */
export interface FacetCoverage {
  total: number;
  /** How many blobs in the range carry the facet (or true when all do). */
  complete: number | boolean;
  maxId: number | bigint | null;
}

export interface ParentListing {
  /** Ids of the blobs the filtered listing returned. */
  ids: readonly (number | bigint)[];
  /** Absent when the API ignored the facet parameters (older Core): the listing is unfiltered. */
  facetCoverage?: FacetCoverage | null;
}

export interface WatermarkDecision {
  watermark: number | bigint | null;
  /** The listing returned blobs above the current watermark: publish a part carrying `watermark`. */
  publish: boolean;
  /** Nothing to publish but the watermark moved: patch the current row forward. */
  patch: boolean;
  /** The returned ids above the current watermark (all of them when there is none): the blobs to read. */
  newIds: (number | bigint)[];
}

function isComplete(c: FacetCoverage): boolean {
  return c.complete === true || (typeof c.complete === "number" && c.complete >= c.total);
}

/**
 * Seed 004 facet-filtered watermark: raise to the newest returned id and, when the facet is complete
 * (blobs excluded above it are known not to match), to the listing's maxId. Only ids above the current
 * watermark are new: an older Core ignores SinceId and lists blobs already covered, which must not make
 * the node publish again. An empty (or wholly covered) listing moves the watermark without publishing,
 * so Core does not schedule a no-op task per tick.
 */
export function nextWatermark(current: number | bigint | null, listing: ParentListing): WatermarkDecision {
  for (const id of listing.ids) {
    if (typeof id !== "bigint" && !Number.isFinite(id))
      throw new JournalError(`listing id ${id} is not a number`, "argument");
  }
  // Ids beyond 2^53 come as bigints; < and > compare bigints and numbers exactly.
  const newIds = listing.ids.filter((id) => current === null || id > current);
  const candidates = [...newIds];
  if (current !== null) candidates.push(current);
  const coverage = listing.facetCoverage;
  if (coverage && coverage.maxId !== null && isComplete(coverage)) candidates.push(coverage.maxId);
  const top = candidates.reduce<number | bigint | null>((a, b) => (a === null || b > a ? b : a), null);
  const watermark = top === null ? null : exactId(top);
  const publish = newIds.length > 0;
  return { watermark, publish, patch: !publish && watermark !== current, newIds };
}

/**
 * Applies an empty listing's decision: patches the current row's watermark without publishing. The
 * returned `patch` says whether a patch was saved (never when no row exists yet).
 */
export async function advanceWatermark(
  registry: JournalRegistry,
  listing: ParentListing,
): Promise<WatermarkDecision> {
  const current = await registry.current();
  const decision = nextWatermark(current?.config.watermark ?? null, listing);
  // With no row there is nothing to patch: the watermark travels with the first published part instead.
  if (!current) return { ...decision, patch: false };
  if (decision.patch) {
    await registry.patch([
      { outputIdentifier: current.config.outputIdentifier, patch: { watermark: decision.watermark } },
    ]);
  }
  return decision;
}
