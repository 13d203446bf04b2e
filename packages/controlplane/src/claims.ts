import { SchemaError } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { type ClaimDoc, type Clock, parseDocument, validateClaim } from "./documents.js";
import { ClaimConflict } from "./errors.js";
import { absolutePath, CLAIMS_PREFIX, claimKey } from "./layout.js";
import { envelopeJson, utf8 } from "./pyjson.js";

export const DEFAULT_CLAIM_STALE_S = 120;
export const DEFAULT_CLAIM_HEARTBEAT_S = 30;

const CLAIM_FILE = /^[0-9a-f]{64}\.json$/;

export interface ClaimView {
  key: string;
  claim: ClaimDoc;
  ageS: number;
  stale: boolean;
}

/** Stale means strictly more than the threshold has passed since the last heartbeat. */
export function isStale(claim: ClaimDoc, now: number): boolean {
  return now - claim.last_heartbeat_at > claim.stale_threshold_s;
}

/** `product:category:name`; the caller gives `category:name`. */
export function claimDomain(product: string, categoryAndName: string): string {
  if (!/^[^:]+:.+$/.test(categoryAndName)) {
    throw new SchemaError(
      `claim domain ${JSON.stringify(categoryAndName)} must be "category:name"`,
      "/domain",
      "claim",
    );
  }
  return `${product}:${categoryAndName}`;
}

export async function readClaim(store: Store, domain: string, now: number): Promise<ClaimView | undefined> {
  const key = claimKey(domain);
  const bytes = await store.get(key);
  if (bytes === undefined) return undefined;
  const claim = validateClaim(parseDocument(bytes, key), key);
  return { key, claim, ageS: now - claim.last_heartbeat_at, stale: isStale(claim, now) };
}

export async function listClaims(store: Store, now: number): Promise<ClaimView[]> {
  const views: ClaimView[] = [];
  for (const key of await store.list(CLAIMS_PREFIX)) {
    // Only <sha256>.json names are claims; anything else (a peer's staging debris) is not ours to parse.
    if (!CLAIM_FILE.test(key.slice(CLAIMS_PREFIX.length))) continue;
    const bytes = await store.get(key);
    if (bytes === undefined) continue; // released between list and get
    const claim = validateClaim(parseDocument(bytes, key), key);
    views.push({ key, claim, ageS: now - claim.last_heartbeat_at, stale: isStale(claim, now) });
  }
  return views;
}

function conflict(domain: string, view: ClaimView, doing: string): ClaimConflict {
  const age = view.ageS.toFixed(1);
  return new ClaimConflict(
    `cannot ${doing} claim ${domain}: held by ${view.claim.owner_id} (${view.stale ? "stale" : "fresh"}, last heartbeat ${age} s ago, threshold ${view.claim.stale_threshold_s} s)`,
    domain,
    view.claim.owner_id,
    view.stale,
    view.ageS,
  );
}

export interface ClaimOptions {
  ownerId: string;
  product: string;
  heartbeatIntervalS?: number;
  staleThresholdS?: number;
}

/** Create-only acquisition. A present claim, even a stale one, is never taken over. */
export async function acquire(
  store: Store,
  domain: string,
  opts: ClaimOptions,
  clock: Clock,
): Promise<ClaimDoc> {
  const key = claimKey(domain);
  const now = clock();
  const doc: ClaimDoc = {
    product: opts.product,
    domain,
    owner_id: opts.ownerId,
    claim_path: absolutePath(store, key),
    acquired_at: now,
    last_heartbeat_at: now,
    heartbeat_interval_s: opts.heartbeatIntervalS ?? DEFAULT_CLAIM_HEARTBEAT_S,
    stale_threshold_s: opts.staleThresholdS ?? DEFAULT_CLAIM_STALE_S,
  };
  if (await store.putIfAbsent(key, utf8(envelopeJson(doc)))) return doc;
  const holder = await readClaim(store, domain, clock());
  if (!holder) {
    // Released between our attempt and our read; report the race rather than loop.
    throw new ClaimConflict(
      `cannot acquire claim ${domain}: it changed hands during acquisition`,
      domain,
      "",
      false,
      0,
    );
  }
  throw conflict(domain, holder, "acquire");
}

/** Atomic rewrite of last_heartbeat_at; refuses if the claim is gone or owned by someone else. */
export async function heartbeatClaim(
  store: Store,
  domain: string,
  ownerId: string,
  clock: Clock,
): Promise<ClaimDoc> {
  const now = clock();
  const held = await readClaim(store, domain, now);
  if (!held)
    throw new ClaimConflict(`cannot heartbeat claim ${domain}: it is not held`, domain, "", false, 0);
  if (held.claim.owner_id !== ownerId) throw conflict(domain, held, "heartbeat");
  const doc: ClaimDoc = { ...held.claim, last_heartbeat_at: now };
  await store.put(held.key, utf8(envelopeJson(doc)));
  return doc;
}

/** Deletes our own claim; a claim owned by someone else is refused (use clear for recovery). */
export async function release(store: Store, domain: string, ownerId: string, clock: Clock): Promise<void> {
  const held = await readClaim(store, domain, clock());
  if (!held) return;
  if (held.claim.owner_id !== ownerId) throw conflict(domain, held, "release");
  await store.delete(held.key);
}

/** Recovery: deletes someone's claim; a fresh claim needs force. Returns the cleared claim, if any. */
export async function clear(
  store: Store,
  domain: string,
  clock: Clock,
  force: boolean,
): Promise<ClaimView | undefined> {
  const held = await readClaim(store, domain, clock());
  if (!held) return undefined;
  if (!held.stale && !force) throw conflict(domain, held, "clear (fresh; use force)");
  await store.delete(held.key);
  return held;
}

/**
 * Deletes every stale claim, never forcing. Each claim is re-read just before deletion and kept if its
 * bytes changed (a heartbeat or a new owner) or it is no longer stale.
 */
export async function sweepStale(store: Store, clock: Clock, dryRun = false): Promise<ClaimView[]> {
  const cleared: ClaimView[] = [];
  for (const view of await listClaims(store, clock())) {
    if (!view.stale) continue;
    const again = await readClaim(store, view.claim.domain, clock());
    if (!again || !again.stale || again.key !== view.key) continue;
    if (envelopeJson(again.claim) !== envelopeJson(view.claim)) continue;
    if (!dryRun) await store.delete(view.key);
    cleared.push(again);
  }
  return cleared;
}
