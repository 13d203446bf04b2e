import { approximateNumber, IntegralFloat, parseJsonExact, stringifyJsonExact } from "@zarr-stream/spec";
import { ControlPlaneCorrupt } from "./errors.js";
import { decodeUtf8 } from "./layout.js";

/** Injected clock: Unix seconds (may be fractional). */
export type Clock = () => number;
export const systemClock: Clock = () => Date.now() / 1000;

export type JsonObject = Record<string, unknown>;

/**
 * A number as parseJsonExact reads it: a JS number (safe integers, non-integral floats), a bigint (an
 * integer beyond 2^53) or an IntegralFloat (`1.0`). Code that computes with one reads it through
 * approximateNumber; the value itself is kept so a rewrite prints what was read.
 */
export type JsonNumber = number | bigint | IntegralFloat;

export const TERMINAL_EVENTS: ReadonlySet<string> = new Set(["run_completed", "run_failed", "run_abandoned"]);

export type RunStatus = "started" | "complete" | "failed" | "abandoned";

export interface RunRecordDoc {
  schema_version: "v2";
  product: string;
  run_id: string;
  status: string;
  parts: JsonNumber;
  events: JsonNumber;
  started_at: JsonNumber;
  updated_at: JsonNumber;
  run_uri: string;
  run_stale_threshold_s: JsonNumber;
  error?: string;
  completed_at?: JsonNumber;
  slot_range?: [JsonNumber, JsonNumber];
  slot_group?: string;
  [extra: string]: unknown;
}

export interface WalEvent {
  schema_version: "v2";
  event_id: string;
  event_type: string;
  product: string;
  run_id: string;
  /** The envelope's Unix seconds, as the float the reference reads it as (IntegralFloat unwrapped). */
  timestamp: number;
  record: JsonObject;
  meta?: JsonObject;
  [extra: string]: unknown;
}

export interface ClaimDoc {
  product: string;
  domain: string;
  owner_id: string;
  claim_path: string;
  acquired_at: number;
  last_heartbeat_at: number;
  heartbeat_interval_s: number;
  stale_threshold_s: number;
  [extra: string]: unknown;
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof IntegralFloat);
}

/** Names the first field that is missing or of the wrong type, or undefined when all are fine. */
function badField(
  doc: JsonObject,
  fields: Record<string, "string" | "number" | "object">,
): string | undefined {
  for (const [name, type] of Object.entries(fields)) {
    const v = doc[name];
    const ok =
      type === "object"
        ? isObject(v)
        : type === "number"
          ? Number.isFinite(approximateNumber(v) ?? Number.NaN)
          : typeof v === type;
    if (!ok) return `${name} must be ${type === "object" ? "an object" : `a ${type}`}`;
  }
  return undefined;
}

/**
 * Parses a whole-file JSON document with every number as Python reads it (parseJsonExact: integers of any
 * size exact, `1.0` kept a float), so a document rewritten or copied from what was read loses no digit.
 * Undecodable bytes or bad UTF-8/JSON raise ControlPlaneCorrupt naming the file.
 */
export function parseDocument(bytes: Uint8Array, file: string): JsonObject {
  const text = decodeUtf8(bytes);
  if (text === undefined) throw new ControlPlaneCorrupt(`${file}: not valid UTF-8`, file);
  let value: unknown;
  try {
    value = parseJsonExact(text, file);
  } catch (e) {
    throw new ControlPlaneCorrupt((e as Error).message, file);
  }
  if (!isObject(value)) throw new ControlPlaneCorrupt(`${file}: top level must be a JSON object`, file);
  return value;
}

/** A field badField passed as a number, as a JS number to compute with (bigints round as Python's float() does). */
export function numeric(v: unknown): number {
  return approximateNumber(v)!;
}

export function validateRunRecord(doc: JsonObject, file: string, runId: string): RunRecordDoc {
  if (doc.schema_version !== "v2") {
    throw new ControlPlaneCorrupt(
      `${file}: schema_version ${stringifyJsonExact(doc.schema_version)} is not "v2"`,
      file,
    );
  }
  const bad = badField(doc, {
    product: "string",
    run_id: "string",
    status: "string",
    started_at: "number",
    updated_at: "number",
  });
  if (bad) throw new ControlPlaneCorrupt(`${file}: ${bad}`, file);
  if (doc.run_id !== runId) {
    throw new ControlPlaneCorrupt(
      `${file}: run_id ${stringifyJsonExact(doc.run_id)} differs from its directory ${runId}`,
      file,
    );
  }
  // Values stay as read (a resumed run rewrites run.json from them); only absent counters get defaults.
  const counter = (v: unknown, fallback: number): JsonNumber =>
    approximateNumber(v) === undefined ? fallback : (v as JsonNumber);
  return {
    ...doc,
    parts: counter(doc.parts, 0),
    events: counter(doc.events, 0),
    run_stale_threshold_s: counter(doc.run_stale_threshold_s, 3600),
  } as RunRecordDoc;
}

/** Validates one WAL line that parsed; a wrong schema_version or envelope is corruption at that line. */
export function validateEvent(value: unknown, file: string, line: number): WalEvent {
  if (!isObject(value))
    throw new ControlPlaneCorrupt(`${file}:${line}: event must be a JSON object`, file, line);
  if (value.schema_version !== "v2") {
    throw new ControlPlaneCorrupt(
      `${file}:${line}: schema_version ${stringifyJsonExact(value.schema_version)} is not "v2"`,
      file,
      line,
    );
  }
  const bad = badField(value, {
    event_id: "string",
    event_type: "string",
    run_id: "string",
    timestamp: "number",
    record: "object",
  });
  if (bad) throw new ControlPlaneCorrupt(`${file}:${line}: ${bad}`, file, line);
  // Events are never rewritten, so the envelope time becomes the float it stands for; record stays exact.
  value.timestamp = numeric(value.timestamp);
  return value as WalEvent;
}

export function validateClaim(doc: JsonObject, file: string): ClaimDoc {
  const bad = badField(doc, {
    product: "string",
    domain: "string",
    owner_id: "string",
    last_heartbeat_at: "number",
    stale_threshold_s: "number",
  });
  if (bad) throw new ControlPlaneCorrupt(`${file}: ${bad}`, file);
  // A claim read is judged by its times and never rewritten from what was read (heartbeats rewrite the
  // holder's own document), so its numbers become JS numbers to compute with.
  const claim = { ...doc } as ClaimDoc;
  for (const k of [
    "acquired_at",
    "last_heartbeat_at",
    "heartbeat_interval_s",
    "stale_threshold_s",
  ] as const) {
    const n = approximateNumber(doc[k]);
    if (n !== undefined) claim[k] = n;
  }
  return claim;
}
