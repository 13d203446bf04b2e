import { IntegralFloat, parseJsonExact } from "@zarr-stream/spec";
import { ControlPlaneCorrupt } from "./errors.js";
import { decodeUtf8 } from "./layout.js";

/** Injected clock: Unix seconds (may be fractional). */
export type Clock = () => number;
export const systemClock: Clock = () => Date.now() / 1000;

export type JsonObject = Record<string, unknown>;

export const TERMINAL_EVENTS: ReadonlySet<string> = new Set(["run_completed", "run_failed", "run_abandoned"]);

export type RunStatus = "started" | "complete" | "failed" | "abandoned";

export interface RunRecordDoc {
  schema_version: "v2";
  product: string;
  run_id: string;
  status: string;
  parts: number;
  events: number;
  started_at: number;
  updated_at: number;
  run_uri: string;
  run_stale_threshold_s: number;
  error?: string;
  completed_at?: number;
  slot_range?: [number, number];
  slot_group?: string;
  [extra: string]: unknown;
}

export interface WalEvent {
  schema_version: "v2";
  event_id: string;
  event_type: string;
  product: string;
  run_id: string;
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
      type === "object" ? isObject(v) : typeof v === type && (type !== "number" || Number.isFinite(v));
    if (!ok) return `${name} must be ${type === "object" ? "an object" : `a ${type}`}`;
  }
  return undefined;
}

/** Parses a whole-file JSON document; undefined bytes or bad UTF-8/JSON raise ControlPlaneCorrupt naming the file. */
export function parseDocument(bytes: Uint8Array, file: string): JsonObject {
  const text = decodeUtf8(bytes);
  if (text === undefined) throw new ControlPlaneCorrupt(`${file}: not valid UTF-8`, file);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new ControlPlaneCorrupt(`${file}: not valid JSON (${(e as Error).message})`, file);
  }
  if (!isObject(value)) throw new ControlPlaneCorrupt(`${file}: top level must be a JSON object`, file);
  return value;
}

/**
 * parseDocument for documents whose hash is recomputed (index records): numbers keep their Python
 * meaning (`1.0` stays a float, integers beyond 2^53 stay exact), so canonical bytes equal the writer's.
 */
export function parseExactDocument(bytes: Uint8Array, file: string): JsonObject {
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

export function validateRunRecord(doc: JsonObject, file: string, runId: string): RunRecordDoc {
  if (doc.schema_version !== "v2") {
    throw new ControlPlaneCorrupt(
      `${file}: schema_version ${JSON.stringify(doc.schema_version)} is not "v2"`,
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
      `${file}: run_id ${JSON.stringify(doc.run_id)} differs from its directory ${runId}`,
      file,
    );
  }
  return {
    ...doc,
    parts: typeof doc.parts === "number" ? doc.parts : 0,
    events: typeof doc.events === "number" ? doc.events : 0,
    run_stale_threshold_s: typeof doc.run_stale_threshold_s === "number" ? doc.run_stale_threshold_s : 3600,
  } as RunRecordDoc;
}

/** Validates one WAL line that parsed; a wrong schema_version or envelope is corruption at that line. */
export function validateEvent(value: unknown, file: string, line: number): WalEvent {
  if (!isObject(value))
    throw new ControlPlaneCorrupt(`${file}:${line}: event must be a JSON object`, file, line);
  if (value.schema_version !== "v2") {
    throw new ControlPlaneCorrupt(
      `${file}:${line}: schema_version ${JSON.stringify(value.schema_version)} is not "v2"`,
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
  return doc as ClaimDoc;
}
