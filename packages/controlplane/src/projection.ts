import { approximateNumber, stringifyJsonExact } from "@zarr-stream/spec";
import type { JsonObject, WalEvent } from "./documents.js";
import { isObject } from "./documents.js";
import { ControlPlaneCorrupt } from "./errors.js";
import { compareCodePoints, pyFloat } from "./pyjson.js";
import type { RunView } from "./wal-reader.js";

/** Current state: one record per key. */
export type ProjectedState = Map<string, JsonObject>;

/** Complete runs in the order they feed current state: (completed_at, run_id). */
export function completeRunsInOrder(runs: RunView[]): RunView[] {
  return runs
    .filter((r) => r.state === "complete")
    .sort((a, b) => a.completedAt! - b.completedAt! || (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0));
}

/**
 * The record an event projects, as the reference derives it: the event's record with `schema_version`
 * "v2" and `timestamp` (the envelope's, as a float) filled in when absent. Every value is kept as read,
 * so integers of any size and Python's `1.0` reach the snapshot unchanged. A record that names another
 * schema_version is one of a format we do not know: a ControlPlaneCorrupt, as the reference raises.
 */
function projectedRecord(event: WalEvent): JsonObject {
  const record: JsonObject = { ...event.record };
  if (!("schema_version" in record)) record.schema_version = "v2";
  if (!("timestamp" in record)) record.timestamp = pyFloat(event.timestamp);
  if (record.schema_version !== "v2") {
    throw new ControlPlaneCorrupt(
      `event ${event.event_id}: record schema_version ${stringifyJsonExact(record.schema_version)} is not "v2"`,
      event.event_id,
    );
  }
  return record;
}

/**
 * Applies one event. Any event whose record carries a non-empty string `key` (including event types we do
 * not know) upserts it, except run_started_with_replacement, which is informational; replacement_committed
 * marks the listed existing keys replaced at its record's time. A key marked again is re-marked, so
 * `replaced_by` names the last replacement, as in the reference; replaying one replacement twice changes
 * nothing.
 */
export function applyEvent(state: ProjectedState, event: WalEvent): void {
  const record = projectedRecord(event);
  if (event.event_type === "run_started_with_replacement") return;
  if (event.event_type === "replacement_committed") {
    const by = typeof record.replacing_run_id === "string" ? record.replacing_run_id : "";
    const at = pyFloat(approximateNumber(record.timestamp) ?? event.timestamp);
    const keys = Array.isArray(record.replaced_span_keys) ? record.replaced_span_keys : [];
    for (const key of keys) {
      if (typeof key !== "string") continue;
      const existing = state.get(key);
      if (!existing) continue;
      state.set(key, { ...existing, status: "replaced", replaced_by: by, replaced_at: at });
    }
    return;
  }
  if (typeof record.key === "string" && record.key !== "") state.set(record.key, record);
}

/** Replays the complete runs in order; a complete run whose segments do not read is its ControlPlaneCorrupt. */
export function applyRuns(state: ProjectedState, runs: RunView[]): ProjectedState {
  for (const run of completeRunsInOrder(runs)) {
    if (run.corrupt) throw run.corrupt;
    for (const event of run.events) applyEvent(state, event);
  }
  return state;
}

/** Full replay of the WAL. Failed, abandoned, live and orphaned runs contribute nothing. */
export function projectRuns(runs: RunView[]): ProjectedState {
  return applyRuns(new Map(), runs);
}

export function sortedRecords(state: ProjectedState): JsonObject[] {
  return [...state.keys()].sort(compareCodePoints).map((k) => state.get(k)!);
}

export interface HistoryEntry {
  runId: string;
  state: RunView["state"];
  orphanReason?: string;
  stale: boolean;
  startedAt?: number;
  completedAt?: number;
  events: number;
  error?: string;
}

/** Every run, including failed, abandoned, live and orphaned ones, in (started_at, run_id) order. */
export function history(runs: RunView[]): HistoryEntry[] {
  const started = (r: RunView) =>
    approximateNumber(r.record?.started_at) ?? r.events[0]?.timestamp ?? Number.POSITIVE_INFINITY;
  return [...runs]
    .sort((a, b) => started(a) - started(b) || (a.runId < b.runId ? -1 : 1))
    .map((r) => {
      const entry: HistoryEntry = { runId: r.runId, state: r.state, stale: r.stale, events: r.events.length };
      if (r.orphanReason) entry.orphanReason = r.orphanReason;
      const s = started(r);
      if (Number.isFinite(s)) entry.startedAt = s;
      if (r.completedAt !== undefined) entry.completedAt = r.completedAt;
      const err = r.record?.error ?? errorOf(r.events);
      if (err !== undefined) entry.error = err;
      return entry;
    });
}

function errorOf(events: WalEvent[]): string | undefined {
  for (const e of [...events].reverse()) {
    const run = e.record.run;
    if (isObject(run) && typeof run.error === "string") return run.error;
  }
  return undefined;
}
