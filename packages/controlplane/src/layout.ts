import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import { SchemaError } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";

/** Every key lives under this prefix so the same code works on a filesystem and an object store. */
export const ROOT = ".firecube/";
export const SCHEMA_KEY = `${ROOT}schema.json`;
export const LATEST_KEY = `${ROOT}LATEST.json`;
export const RUNS_PREFIX = `${ROOT}runs/`;
export const CLAIMS_PREFIX = `${ROOT}claims/`;
export const SNAPSHOTS_PREFIX = `${ROOT}snapshots/`;
export const COMPACT_LOCK_KEY = `${SNAPSHOTS_PREFIX}compact.lock`;
export const INDEX_KEY = `${ROOT}index/current.json`;
export const SLOT_INDEX_KEY = `${ROOT}slot_index/current.json`;

export const SEGMENT_EVENTS = 25;

/** `:` separates event-id fields and `/` separates keys, so a run id may contain neither. */
const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

export function assertRunId(runId: string): void {
  if (typeof runId !== "string" || !RUN_ID.test(runId)) {
    throw new SchemaError(
      `run id ${JSON.stringify(runId)} must match ${RUN_ID.source} (no ':' or '/')`,
      "/run_id",
      "run",
    );
  }
}

export function runPrefix(runId: string): string {
  return `${RUNS_PREFIX}${runId}/`;
}

export function runRecordKey(runId: string): string {
  return `${runPrefix(runId)}run.json`;
}

export function segmentName(part: number): string {
  return `events-${String(part).padStart(5, "0")}.jsonl`;
}

export function segmentKey(runId: string, part: number): string {
  return `${runPrefix(runId)}${segmentName(part)}`;
}

const SEGMENT = /^events-(\d{5,})\.jsonl$/;

/** The segment number of a file name, or undefined when it is not a segment. */
export function segmentNumber(name: string): number | undefined {
  const m = SEGMENT.exec(name);
  return m ? Number(m[1]) : undefined;
}

export function eventId(runId: string, part: number, idx: number): string {
  return `${runId}:${String(part).padStart(5, "0")}:${String(idx).padStart(6, "0")}`;
}

export function claimDigest(domain: string): string {
  return createHash("sha256").update(domain, "utf8").digest("hex");
}

export function claimKey(domain: string): string {
  return `${CLAIMS_PREFIX}${claimDigest(domain)}.json`;
}

export function snapshotKey(generation: string): string {
  return `${SNAPSHOTS_PREFIX}snapshot-${generation}.jsonl`;
}

export function snapshotMetaKey(generation: string): string {
  return `${SNAPSHOTS_PREFIX}snapshot-${generation}.meta.json`;
}

const SNAPSHOT_FILE = /^snapshot-(\d+)\.(jsonl|meta\.json)$/;

export function snapshotGeneration(name: string): string | undefined {
  return SNAPSHOT_FILE.exec(name)?.[1];
}

/** Absolute location of a key for the documents that record one (claim_path, run_uri): a path for file:// stores. */
export function absolutePath(store: Store, key: string): string {
  const base = store.url.replace(/\/+$/, "");
  if (base.startsWith("file://")) return `${fileURLToPath(base)}/${key}`;
  return `${base}/${key}`;
}

export function absoluteUri(store: Store, key: string): string {
  return `${store.url.replace(/\/+$/, "")}/${key}`;
}

const decoder = new TextDecoder("utf-8", { fatal: true });
export function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return decoder.decode(bytes);
  } catch {
    return undefined;
  }
}
