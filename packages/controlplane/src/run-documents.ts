import { randomBytes } from "node:crypto";
import { SchemaError } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import type { JsonNumber, JsonObject, RunRecordDoc } from "./documents.js";
import { absoluteUri, runPrefix } from "./layout.js";
import type { RunView } from "./wal-reader.js";

export interface StartRunOptions {
  runId?: string;
  /** Run ids this run will replace: emits run_started_with_replacement. */
  replaces?: string[];
  outputPath?: string;
  outputFormat?: string;
  meta?: JsonObject;
  /** [start, end): safe integers or bigints (a bigint carries an integer beyond 2^53 exactly). */
  slotRange?: [JsonNumber, JsonNumber];
  slotGroup?: string;
}

/** What every run document of one control plane shares. */
export interface RunDocContext {
  store: Store;
  product: string;
}

export function defaultRunId(now: number): string {
  const stamp = new Date(Math.floor(now * 1000))
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
  return `run-${stamp}-${randomBytes(4).toString("hex")}`;
}

export function checkSlotRange(slotRange: [JsonNumber, JsonNumber] | undefined): void {
  if (slotRange === undefined) return;
  const [start, end] = slotRange.map((v) =>
    typeof v === "bigint" ? v : typeof v === "number" && Number.isSafeInteger(v) ? BigInt(v) : undefined,
  );
  if (start === undefined || end === undefined || !(start < end)) {
    throw new SchemaError(
      `slot_range [${slotRange.map(String).join(", ")}] must be integers [start, end) with start < end (beyond 2^53 as bigints)`,
      "/slot_range",
      "run",
    );
  }
}

/** The run event payload (run_started, run_completed, ...): the run's output and its status. */
export function runPayload(
  ctx: RunDocContext,
  runId: string,
  status: string,
  timestamp: number,
  o: StartRunOptions & { error?: string },
): JsonObject {
  const run: JsonObject = {
    output_path: o.outputPath ?? ctx.store.url,
    output_format: o.outputFormat ?? "zarr",
  };
  if (o.error !== undefined) run.error = o.error;
  const record: JsonObject = {
    key: `run_${runId}`,
    type: "run",
    size: 0,
    timestamp,
    status,
    meta: { ...(o.meta ?? {}), run_id: runId },
    run,
    schema_version: "v2",
  };
  if (o.slotRange) record.slot_range = o.slotRange;
  if (o.slotGroup !== undefined) record.slot_group = o.slotGroup;
  return record;
}

/** The slot fields a run record carries, as run options (so terminal events repeat them). */
export function slotOf(r: RunRecordDoc): StartRunOptions {
  const o: StartRunOptions = {};
  if (r.slot_range) o.slotRange = r.slot_range;
  if (r.slot_group !== undefined) o.slotGroup = r.slot_group;
  return o;
}

/** run.json of a run that starts now. */
export function startedRunRecord(
  ctx: RunDocContext,
  runId: string,
  now: number,
  staleThresholdS: number,
  o: StartRunOptions,
): RunRecordDoc {
  const record: RunRecordDoc = {
    schema_version: "v2",
    product: ctx.product,
    run_id: runId,
    status: "started",
    parts: 0,
    events: 0,
    started_at: now,
    updated_at: now,
    run_uri: absoluteUri(ctx.store, runPrefix(runId).slice(0, -1)),
    run_stale_threshold_s: staleThresholdS,
  };
  if (o.slotRange) record.slot_range = o.slotRange;
  if (o.slotGroup !== undefined) record.slot_group = o.slotGroup;
  return record;
}

/** run.json for an orphan (segments but no run.json), written when it is abandoned. */
export function orphanRunRecord(ctx: RunDocContext, view: RunView, now: number): RunRecordDoc {
  return {
    schema_version: "v2",
    product: ctx.product,
    run_id: view.runId,
    status: "abandoned",
    parts: 0,
    events: 0,
    started_at: view.events[0]?.timestamp ?? now,
    updated_at: now,
    run_uri: absoluteUri(ctx.store, runPrefix(view.runId).slice(0, -1)),
    run_stale_threshold_s: view.staleThresholdS,
  };
}
