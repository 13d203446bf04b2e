import { randomBytes } from "node:crypto";
import { approximateNumber, parseJsonExact } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { storeAgeS } from "./claim-observer.js";
import { scanClaims } from "./claims.js";
import { type Clock, isObject, type JsonObject, parseDocument, type RunRecordDoc } from "./documents.js";
import { SnapshotRebuildRefused } from "./errors.js";
import {
  absolutePath,
  COMPACT_LOCK_KEY,
  decodeUtf8,
  LATEST_KEY,
  SNAPSHOTS_PREFIX,
  snapshotGeneration,
  snapshotKey,
  snapshotMetaKey,
} from "./layout.js";
import {
  applyRuns,
  completeRunsInOrder,
  type ProjectedState,
  projectRuns,
  sortedRecords,
} from "./projection.js";
import { compareCodePoints, envelopeJson, recordJson, utf8 } from "./pyjson.js";
import { isLive, type RunView, readRuns } from "./wal-reader.js";

export interface SnapshotMeta {
  schema_version: "v2";
  generation: string;
  completed_before: number;
  created_at: number;
  records: number;
  product: string;
}

export interface LatestDoc {
  schema_version: "v2";
  generation: string;
  completed_before: number;
  product: string;
  snapshot_path: string;
  snapshot_meta_path: string;
}

export const DEFAULT_KEEP_GENERATIONS = 3;
export const DEFAULT_COMPACT_LOCK_STALE_S = 600;

export interface RebuildOptions {
  product: string;
  ownerId: string;
  clock: Clock;
  /** Snapshot generations kept after a rebuild (the new one included). */
  keep?: number;
  /** A compact.lock older than this is a crashed rebuild's and is recovered. */
  lockStaleS?: number;
}

export type RebuildResult =
  | { rebuilt: true; generation: string; records: number; completedBefore: number; deleted: string[] }
  | { rebuilt: false; reason: "locked"; holder: string };

/**
 * snapshots/compact.lock in the reference's format (`token`, `created_at`), so its rebuild skips while we
 * hold it, plus the owner for reports and `acquired_at` for our releases before the reference's format.
 */
interface LockDoc {
  token: string;
  created_at: number;
  owner_id: string;
  acquired_at: number;
}

/**
 * When a compact.lock was taken, by its own words: the reference's `created_at`, or `acquired_at` as
 * earlier releases of ours wrote; else the store's time (the file's age) where the store keeps one.
 * Undefined when nothing says.
 */
async function lockAge(store: Store, doc: JsonObject, now: number): Promise<number | undefined> {
  const at = approximateNumber(doc.created_at) ?? approximateNumber(doc.acquired_at);
  if (at !== undefined && Number.isFinite(at)) return now - at;
  return storeAgeS(store, COMPACT_LOCK_KEY);
}

/**
 * Takes snapshots/compact.lock. Unlike the reference, a lock left by a crashed rebuild is recovered once it
 * is older than lockStaleS: re-read, confirmed unchanged, deleted, and the create-only put retried once.
 * A lock whose age cannot be told is held, never broken.
 */
async function takeLock(store: Store, opts: RebuildOptions): Promise<LockDoc | { holder: string }> {
  const now = opts.clock();
  const mine: LockDoc = {
    token: randomBytes(16).toString("hex"),
    created_at: now,
    owner_id: opts.ownerId,
    acquired_at: now,
  };
  const bytes = utf8(envelopeJson(mine));
  if (await store.putIfAbsent(COMPACT_LOCK_KEY, bytes)) return mine;
  const seen = await store.get(COMPACT_LOCK_KEY);
  if (seen === undefined)
    return (await store.putIfAbsent(COMPACT_LOCK_KEY, bytes)) ? mine : { holder: "unknown" };
  let holder = "unreadable lock";
  let stale = true;
  try {
    const doc = parseDocument(seen, COMPACT_LOCK_KEY);
    holder =
      typeof doc.owner_id === "string"
        ? doc.owner_id
        : typeof doc.token === "string"
          ? `token ${doc.token}`
          : "unknown";
    const age = await lockAge(store, doc, opts.clock());
    stale = age !== undefined && age > (opts.lockStaleS ?? DEFAULT_COMPACT_LOCK_STALE_S);
  } catch {
    // An unparseable lock cannot say how old it is; a create-only write never leaves one, so it is debris.
  }
  if (!stale) return { holder };
  const again = await store.get(COMPACT_LOCK_KEY);
  if (again === undefined || Buffer.compare(again, seen) !== 0) return { holder };
  await store.delete(COMPACT_LOCK_KEY);
  return (await store.putIfAbsent(COMPACT_LOCK_KEY, bytes)) ? mine : { holder };
}

async function dropLock(store: Store, mine: LockDoc): Promise<void> {
  const bytes = await store.get(COMPACT_LOCK_KEY);
  if (bytes !== undefined && decodeUtf8(bytes) === envelopeJson(mine)) await store.delete(COMPACT_LOCK_KEY);
}

async function generations(store: Store): Promise<string[]> {
  const found = new Set<string>();
  for (const key of await store.list(SNAPSHOTS_PREFIX)) {
    const gen = snapshotGeneration(key.slice(SNAPSHOTS_PREFIX.length));
    if (gen !== undefined) found.add(gen);
  }
  return [...found].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0));
}

/** Refuses while any claim or live/orphaned run exists, and names them. */
export async function assertRebuildAllowed(store: Store, clock: Clock, runs?: RunView[]): Promise<RunView[]> {
  const { claims, corrupt } = await scanClaims(store, clock());
  if (claims.length + corrupt.length > 0) {
    const names = [
      ...claims.map((c) => `${c.claim.domain} (${c.claim.owner_id})`),
      ...corrupt.map((c) => `${c.key} (unreadable)`),
    ];
    throw new SnapshotRebuildRefused(`blocking claims exist: ${names.join(", ")}`, "blocking-claims", names);
  }
  const all = runs ?? (await readRuns(store, clock));
  const live = all.filter(isLive).map((r) => `${r.runId} (${r.orphanReason ?? r.state})`);
  if (live.length > 0) {
    throw new SnapshotRebuildRefused(`live or orphaned runs exist: ${live.join(", ")}`, "live-runs", live);
  }
  return all;
}

/** Writes snapshot, meta, then LATEST.json (each an atomic put), then removes generations beyond `keep`. */
export async function rebuildSnapshot(store: Store, opts: RebuildOptions): Promise<RebuildResult> {
  const lock = await takeLock(store, opts);
  if ("holder" in lock) return { rebuilt: false, reason: "locked", holder: lock.holder };
  try {
    // The cutoff is read before the runs are listed: a run that completes after the listing completes
    // after the cutoff too, so readers replay it (read after, it was neither folded in nor replayed).
    const completedBefore = opts.clock();
    const runs = await assertRebuildAllowed(store, opts.clock);
    const folded = completeRunsInOrder(runs).filter((r) => r.completedAt! < completedBefore);
    const records = sortedRecords(projectRuns(folded));
    const existing = await generations(store);
    let generation = BigInt(Math.round(completedBefore * 1e6)) * 1000n;
    const newest = existing.at(-1);
    if (newest !== undefined && BigInt(newest) >= generation) generation = BigInt(newest) + 1n;
    const gen = generation.toString();
    const body = records
      .map((r) => `${recordJson(r, `snapshot record ${JSON.stringify(r.key)}`)}\n`)
      .join("");
    await store.put(snapshotKey(gen), utf8(body));
    const meta: SnapshotMeta = {
      schema_version: "v2",
      generation: gen,
      completed_before: completedBefore,
      created_at: opts.clock(),
      records: records.length,
      product: opts.product,
    };
    await store.put(snapshotMetaKey(gen), utf8(envelopeJson(meta)));
    const latest: LatestDoc = {
      schema_version: "v2",
      generation: gen,
      completed_before: completedBefore,
      product: opts.product,
      snapshot_path: absolutePath(store, snapshotKey(gen)),
      snapshot_meta_path: absolutePath(store, snapshotMetaKey(gen)),
    };
    await store.put(LATEST_KEY, utf8(envelopeJson(latest)));
    const deleted = await collectGarbage(store, opts.keep ?? DEFAULT_KEEP_GENERATIONS, gen);
    return { rebuilt: true, generation: gen, records: records.length, completedBefore, deleted };
  } finally {
    await dropLock(store, lock);
  }
}

/** Deletes all but the newest `keep` generations, never the one LATEST.json names. Returns deleted keys. */
export async function collectGarbage(store: Store, keep: number, latest: string): Promise<string[]> {
  const gens = await generations(store);
  const doomed = gens.slice(0, Math.max(0, gens.length - Math.max(1, keep))).filter((g) => g !== latest);
  const deleted: string[] = [];
  for (const g of doomed) {
    for (const key of [snapshotKey(g), snapshotMetaKey(g)]) {
      await store.delete(key);
      deleted.push(key);
    }
  }
  return deleted;
}

interface LoadedSnapshot {
  latest: LatestDoc;
  state: ProjectedState;
}

/** Loads and validates LATEST -> meta -> records; any inconsistency is reported as a string, not thrown. */
async function loadSnapshot(store: Store): Promise<LoadedSnapshot | string> {
  const latestBytes = await store.get(LATEST_KEY);
  if (latestBytes === undefined) return "no LATEST.json";
  let latest: JsonObject;
  let meta: JsonObject;
  try {
    latest = parseDocument(latestBytes, LATEST_KEY);
  } catch (e) {
    return (e as Error).message;
  }
  const gen = latest.generation;
  if (latest.schema_version !== "v2" || typeof gen !== "string" || !/^\d+$/.test(gen)) {
    return `${LATEST_KEY}: bad schema_version or generation`;
  }
  // The reference writes completed_before as a float (`0.0` before any run completed): read as the float it is.
  const completedBefore = approximateNumber(latest.completed_before);
  if (completedBefore === undefined || !Number.isFinite(completedBefore))
    return `${LATEST_KEY}: completed_before must be a number`;
  const metaBytes = await store.get(snapshotMetaKey(gen));
  if (metaBytes === undefined) return `${snapshotMetaKey(gen)} is missing`;
  try {
    meta = parseDocument(metaBytes, snapshotMetaKey(gen));
  } catch (e) {
    return (e as Error).message;
  }
  const count = approximateNumber(meta.records);
  if (meta.schema_version !== "v2" || meta.generation !== gen || count === undefined) {
    return `${snapshotMetaKey(gen)}: does not describe generation ${gen}`;
  }
  const body = await store.get(snapshotKey(gen));
  if (body === undefined) return `${snapshotKey(gen)} is missing`;
  const text = decodeUtf8(body);
  if (text === undefined) return `${snapshotKey(gen)}: not valid UTF-8`;
  const lines = text === "" ? [] : text.endsWith("\n") ? text.slice(0, -1).split("\n") : ["\u0000torn"];
  if (lines.length !== count) return `${snapshotKey(gen)}: ${lines.length} lines, meta says ${count}`;
  const state: ProjectedState = new Map();
  let previous: string | undefined;
  for (const [i, line] of lines.entries()) {
    let rec: unknown;
    try {
      rec = parseJsonExact(line, "snapshot record");
    } catch {
      return `${snapshotKey(gen)}:${i + 1}: malformed line`;
    }
    if (!isObject(rec) || typeof rec.key !== "string")
      return `${snapshotKey(gen)}:${i + 1}: record without a key`;
    if (previous !== undefined && compareCodePoints(previous, rec.key) >= 0) {
      return `${snapshotKey(gen)}:${i + 1}: keys not strictly sorted`;
    }
    previous = rec.key;
    state.set(rec.key, rec);
  }
  return { latest: { ...latest, completed_before: completedBefore } as unknown as LatestDoc, state };
}

export interface ReadStateResult {
  state: ProjectedState;
  source: "snapshot" | "full-replay";
  generation?: string;
  /** Why the snapshot was not used. */
  fallbackReason?: string;
}

/** Snapshot + replay of runs completed at or after its cutoff; a missing or corrupt snapshot means a full replay. */
export async function readState(store: Store, clock: Clock): Promise<ReadStateResult> {
  const snap = await loadSnapshot(store);
  if (typeof snap === "string") {
    return { state: projectRuns(await readRuns(store, clock)), source: "full-replay", fallbackReason: snap };
  }
  // run.json turns terminal only after the WAL's terminal event, so a terminal run.json is enough to skip
  // the segments of runs that cannot contribute: failed or abandoned ones, and those folded in.
  const cutoff = snap.latest.completed_before;
  const settled = (r: RunRecordDoc) =>
    r.status === "failed" ||
    r.status === "abandoned" ||
    (r.status === "complete" && (approximateNumber(r.completed_at) ?? Number.POSITIVE_INFINITY) < cutoff);
  const runs = await readRuns(store, clock, settled);
  const later = runs.filter((r) => r.state === "complete" && r.completedAt! >= cutoff);
  return { state: applyRuns(snap.state, later), source: "snapshot", generation: snap.latest.generation };
}

export interface SnapshotStatus {
  latest?: LatestDoc;
  generations: string[];
  valid: boolean;
  problem?: string;
  records?: number;
}

export async function snapshotStatus(store: Store): Promise<SnapshotStatus> {
  const gens = await generations(store);
  const snap = await loadSnapshot(store);
  if (typeof snap === "string") return { generations: gens, valid: false, problem: snap };
  return { latest: snap.latest, generations: gens, valid: true, records: snap.state.size };
}
