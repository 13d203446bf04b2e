import { ClaimLost, SchemaError } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { type ClaimObserver, storeAgeS } from "./claim-observer.js";
import { type ClaimDoc, type Clock, parseDocument, validateClaim } from "./documents.js";
import { ClaimConflict } from "./errors.js";
import { absolutePath, CLAIMS_PREFIX, claimKey } from "./layout.js";
import { envelopeJson, utf8 } from "./pyjson.js";
import { cas, sameBytes, type Versioned } from "./store-cas.js";

export const DEFAULT_CLAIM_STALE_S = 120;
export const DEFAULT_CLAIM_HEARTBEAT_S = 30;

const CLAIM_FILE = /^[0-9a-f]{64}\.json$/;

export interface ClaimView {
  key: string;
  /** The store's version of the claim object; every heartbeat changes it. */
  version: string;
  claim: ClaimDoc;
  ageS: number;
  /** Stale by the holder's own last_heartbeat_at against our wall clock (the format's definition). */
  stale: boolean;
}

/** A claim file that does not parse or validate: it can only be judged by observing its version. */
export interface CorruptClaim {
  key: string;
  version: string;
  problem: string;
}

/** What a clear or sweep removed; `corrupt` says the file was unreadable (domain and owner then unknown). */
export interface ClearedClaim {
  key: string;
  domain: string | undefined;
  ownerId: string | undefined;
  corrupt?: string;
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

/** The claim in `got`; an unreadable claim file is a ControlPlaneCorrupt (via validation). */
function claimView(key: string, got: Versioned, now: number): ClaimView {
  const claim = validateClaim(parseDocument(got.bytes, key), key);
  return {
    key,
    version: got.version,
    claim,
    ageS: now - claim.last_heartbeat_at,
    stale: isStale(claim, now),
  };
}

function toView(key: string, got: Versioned, now: number): ClaimView | CorruptClaim {
  try {
    return claimView(key, got, now);
  } catch (e) {
    return { key, version: got.version, problem: (e as Error).message };
  }
}

function isCorrupt(v: ClaimView | CorruptClaim): v is CorruptClaim {
  return "problem" in v;
}

async function readAt(store: Store, key: string, now: number): Promise<ClaimView | CorruptClaim | undefined> {
  const got = await cas(store).get(key);
  return got === undefined ? undefined : toView(key, got, now);
}

/** The claim on a domain, or undefined; an unreadable claim file is a ControlPlaneCorrupt (via validation). */
export async function readClaim(store: Store, domain: string, now: number): Promise<ClaimView | undefined> {
  const key = claimKey(domain);
  const got = await cas(store).get(key);
  return got === undefined ? undefined : claimView(key, got, now);
}

/** Every claim file, readable or not. Only <sha256>.json names are claims; anything else is not ours to parse. */
export async function scanClaims(
  store: Store,
  now: number,
): Promise<{ claims: ClaimView[]; corrupt: CorruptClaim[] }> {
  const claims: ClaimView[] = [];
  const corrupt: CorruptClaim[] = [];
  for (const key of await store.list(CLAIMS_PREFIX)) {
    if (!CLAIM_FILE.test(key.slice(CLAIMS_PREFIX.length))) continue;
    const v = await readAt(store, key, now);
    if (v === undefined) continue; // released between list and get
    if (isCorrupt(v)) corrupt.push(v);
    else claims.push(v);
  }
  return { claims, corrupt };
}

/** The readable claims (see scanClaims for the unreadable ones). */
export async function listClaims(store: Store, now: number): Promise<ClaimView[]> {
  return (await scanClaims(store, now)).claims;
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

/** A claim we hold: its document and the store version we last wrote (the fence for the next write). */
export interface HeldClaim {
  doc: ClaimDoc;
  version: string;
}

/**
 * Create-only acquisition (an atomic create, the same primitive the reference uses, so the two exclude
 * each other). A present claim, even a stale one, is never taken over.
 */
export async function acquire(
  store: Store,
  domain: string,
  opts: ClaimOptions,
  clock: Clock,
): Promise<HeldClaim> {
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
  const bytes = utf8(envelopeJson(doc));
  if (await store.putIfAbsent(key, bytes)) {
    const got = await cas(store).get(key);
    // Nobody may clear a claim until it has been observed unchanged for its threshold, so the object
    // read right after creating it is ours unless the store lost it.
    if (got === undefined || !sameBytes(got.bytes, bytes)) {
      throw new ClaimLost(`claim ${domain} changed right after it was acquired`, domain);
    }
    return { doc, version: got.version };
  }
  const holder = await readAt(store, key, clock());
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
  if (isCorrupt(holder)) {
    throw new ClaimConflict(
      `cannot acquire claim ${domain}: its file is unreadable (${holder.problem}); clear it with force`,
      domain,
      "",
      false,
      0,
    );
  }
  throw conflict(domain, holder, "acquire");
}

/**
 * Refreshes last_heartbeat_at with a conditional write on the version we last wrote, so a heartbeat that
 * arrives after the claim was cleared (and maybe taken) can never overwrite the new holder's claim. The
 * heartbeat_count field changes the bytes even when the clock did not move, so every heartbeat is a new
 * version for observers.
 */
export async function heartbeatClaim(store: Store, held: HeldClaim, clock: Clock): Promise<HeldClaim> {
  const domain = held.doc.domain;
  const count = typeof held.doc.heartbeat_count === "number" ? held.doc.heartbeat_count : 0;
  const doc: ClaimDoc = { ...held.doc, last_heartbeat_at: clock(), heartbeat_count: count + 1 };
  const version = await cas(store).put(claimKey(domain), utf8(envelopeJson(doc)), held.version);
  if (version === undefined) {
    throw new ClaimLost(
      `claim ${domain} is no longer held by ${held.doc.owner_id}: heartbeat refused`,
      domain,
    );
  }
  return { doc, version };
}

/**
 * The fence before a commit: the claim object must still be the version we last wrote, or a later one of
 * our own acquisition (a heartbeat of ours that landed while this check read the claim).
 */
export async function assertHeld(store: Store, held: HeldClaim): Promise<void> {
  const domain = held.doc.domain;
  const key = claimKey(domain);
  const got = await cas(store).get(key);
  if (got === undefined || (got.version !== held.version && !sameAcquisition(got.bytes, key, held.doc))) {
    throw new ClaimLost(
      `claim ${domain} is no longer held by ${held.doc.owner_id} (${got === undefined ? "cleared" : "rewritten by another holder"})`,
      domain,
    );
  }
}

function sameAcquisition(bytes: Uint8Array, key: string, ours: ClaimDoc): boolean {
  try {
    const doc = validateClaim(parseDocument(bytes, key), key);
    return doc.owner_id === ours.owner_id && doc.acquired_at === ours.acquired_at;
  } catch {
    return false;
  }
}

/** Deletes our own claim; a claim owned by someone else is refused (use clear for recovery). */
export async function release(store: Store, domain: string, ownerId: string, clock: Clock): Promise<void> {
  const held = await readClaim(store, domain, clock());
  if (!held) return;
  if (held.claim.owner_id !== ownerId) throw conflict(domain, held, "release");
  await store.delete(held.key);
}

/**
 * True when the object kept `version` for strictly longer than `windowS` on the observer's clock. Any
 * change (a heartbeat, a new holder, a release) ends the watch early with false.
 */
export async function observedUnchanged(
  store: Store,
  key: string,
  version: string,
  windowS: number,
  observer: ClaimObserver,
): Promise<boolean> {
  const start = observer.now();
  const step = Math.min(1, Math.max(windowS / 8, 0.005));
  for (;;) {
    const elapsed = observer.now() - start;
    const got = await cas(store).get(key);
    if (got?.version !== version) return false;
    if (elapsed > windowS) return true;
    await observer.sleep(Math.min(step, windowS - elapsed + step / 2));
  }
}

function cleared(v: ClaimView | CorruptClaim): ClearedClaim {
  if (isCorrupt(v)) return { key: v.key, domain: undefined, ownerId: undefined, corrupt: v.problem };
  return { key: v.key, domain: v.claim.domain, ownerId: v.claim.owner_id };
}

/**
 * Whether recovery may clear this claim without force: a readable claim must be stale by its own
 * last_heartbeat_at and also by the store's time: not rewritten for its whole threshold, read from the
 * file's modification time where the store has one, else watched on our monotonic clock. An unreadable
 * claim has no heartbeat to trust, so only the store's time (default threshold) decides.
 */
async function clearable(
  store: Store,
  v: ClaimView | CorruptClaim,
  observer: ClaimObserver,
): Promise<boolean> {
  if (!isCorrupt(v) && !v.stale) return false;
  const windowS = isCorrupt(v) ? DEFAULT_CLAIM_STALE_S : v.claim.stale_threshold_s;
  const age = await storeAgeS(store, v.key);
  if (age !== undefined) return age > windowS;
  return observedUnchanged(store, v.key, v.version, windowS, observer);
}

/**
 * Removes an observed-silent claim only if it is still the version observed: a conditional write turns it
 * into a retired marker first, so a heartbeat that lands after the observation makes the clear fail
 * instead of deleting a live claim. The marker is deleted right away (it names no real owner, and until it
 * is gone a new acquisition meets a conflict, never a takeover). Returns false when the claim moved on.
 */
async function retire(store: Store, v: ClaimView | CorruptClaim, clock: Clock): Promise<boolean> {
  const marker: ClaimDoc = {
    ...(isCorrupt(v) ? { product: "", domain: "" } : { product: v.claim.product, domain: v.claim.domain }),
    owner_id: "",
    claim_path: "",
    acquired_at: clock(),
    last_heartbeat_at: 0,
    heartbeat_interval_s: 0,
    stale_threshold_s: 0,
    retired: true,
  };
  if ((await cas(store).put(v.key, utf8(envelopeJson(marker)), v.version)) === undefined) return false;
  await store.delete(v.key);
  return true;
}

/**
 * Recovery: deletes someone's claim. Without force the claim must be clearable (see above); a fresh one
 * is a ClaimConflict. With force any claim, including an unreadable file, is deleted.
 */
export async function clear(
  store: Store,
  domain: string,
  clock: Clock,
  force: boolean,
  observer: ClaimObserver,
): Promise<ClearedClaim | undefined> {
  const key = claimKey(domain);
  const v = await readAt(store, key, clock());
  if (!v) return undefined;
  if (!force && !((await clearable(store, v, observer)) && (await retire(store, v, clock)))) {
    if (isCorrupt(v)) {
      throw new ClaimConflict(
        `cannot clear claim ${domain}: its file is unreadable (${v.problem}) and changed while observed; use force`,
        domain,
        "",
        false,
        0,
      );
    }
    const again = (await readAt(store, key, clock())) ?? v;
    throw conflict(domain, isCorrupt(again) ? v : again, "clear (fresh or heartbeating; use force)");
  }
  await store.delete(key);
  return cleared(v);
}

/**
 * Deletes every clearable claim (observed in parallel), never forcing. Unreadable claim files are cleared
 * when observed unchanged and reported with `corrupt`.
 */
export async function sweepStale(
  store: Store,
  clock: Clock,
  observer: ClaimObserver,
  dryRun = false,
): Promise<ClearedClaim[]> {
  const { claims, corrupt } = await scanClaims(store, clock());
  const candidates: (ClaimView | CorruptClaim)[] = [...claims, ...corrupt];
  const verdicts = await Promise.all(candidates.map((v) => clearable(store, v, observer)));
  const out: ClearedClaim[] = [];
  for (const [i, v] of candidates.entries()) {
    if (!verdicts[i]) continue;
    if (!dryRun && !(await retire(store, v, clock))) continue;
    out.push(cleared(v));
  }
  return out;
}
