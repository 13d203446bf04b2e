import type { JsonObject, WalEvent } from "./documents.js";
import { isObject } from "./documents.js";
import { compareCodePoints } from "./pyjson.js";
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
 * Applies one event. Any event whose record carries a string `key` (including event types we do not know)
 * upserts it; replacement_committed marks the listed existing keys replaced, keeping the first marking so
 * replaying the same replacement twice changes nothing.
 */
export function applyEvent(state: ProjectedState, event: WalEvent): void {
  const record = event.record;
  if (event.event_type === "replacement_committed") {
    const by = record.replacing_run_id;
    const keys = Array.isArray(record.replaced_span_keys) ? record.replaced_span_keys : [];
    for (const key of keys) {
      if (typeof key !== "string") continue;
      const existing = state.get(key);
      if (!existing || existing.status === "replaced") continue;
      state.set(key, { ...existing, status: "replaced", replaced_by: by, replaced_at: event.timestamp });
    }
    return;
  }
  if (typeof record.key === "string") state.set(record.key, record);
}

export function applyRuns(state: ProjectedState, runs: RunView[]): ProjectedState {
  for (const run of completeRunsInOrder(runs)) for (const event of run.events) applyEvent(state, event);
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
  const started = (r: RunView) => r.record?.started_at ?? r.events[0]?.timestamp ?? Number.POSITIVE_INFINITY;
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
