import { approximateNumber, parseJsonExact } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import {
  type Clock,
  parseDocument,
  type RunRecordDoc,
  TERMINAL_EVENTS,
  validateEvent,
  validateRunRecord,
  type WalEvent,
} from "./documents.js";
import { ControlPlaneCorrupt } from "./errors.js";
import { decodeUtf8, RUNS_PREFIX, runPrefix, segmentNumber } from "./layout.js";

export type RunState = "live" | "complete" | "failed" | "abandoned" | "orphaned";
export type OrphanReason = "missing_run_meta" | "unreadable_run_meta";

export interface RunView {
  runId: string;
  state: RunState;
  orphanReason?: OrphanReason;
  /** Why run.json was unreadable, for `unreadable_run_meta`. */
  problem?: string;
  record?: RunRecordDoc;
  events: WalEvent[];
  /** Segment numbers present, ascending (numeric, not string, order). */
  segments: number[];
  /** Last sign of life: run.json updated_at, or the newest event of an orphan. */
  updatedAt?: number;
  staleThresholdS: number;
  /** Not terminal and silent for strictly longer than its threshold. */
  stale: boolean;
  completedAt?: number;
  /** The dropped torn line, when one was accepted. */
  tornTail?: { file: string; line: number };
  /**
   * The run's WAL ends it (a terminal event) but run.json does not say so: missing, unreadable or still
   * live, as a writer killed between its last segment and its last run.json leaves it. `recover` writes
   * the run.json the writer did not.
   */
  recordLags?: boolean;
  /**
   * Why the run's segments could not be read (a malformed line, a torn tail where none may be). Its
   * state then comes from run.json alone and `events` is empty; projecting it, when it is complete, is a
   * ControlPlaneCorrupt, listing and recovering the product are not.
   */
  corrupt?: ControlPlaneCorrupt;
}

const TERMINAL_STATE: Record<string, RunState> = {
  run_completed: "complete",
  run_failed: "failed",
  run_abandoned: "abandoned",
};

/** run.json statuses that end a run: the reference's `is_terminal`. */
const TERMINAL_STATUS: Record<string, RunState> = {
  complete: "complete",
  failed: "failed",
  abandoned: "abandoned",
};

/** Whether a run.json status ends its run. */
export function isTerminalStatus(status: unknown): status is "complete" | "failed" | "abandoned" {
  return typeof status === "string" && Object.hasOwn(TERMINAL_STATUS, status);
}

export const DEFAULT_RUN_STALE_S = 3600;

interface ParsedSegment {
  part: number;
  file: string;
  events: WalEvent[];
  torn?: number;
}

function parseSegment(bytes: Uint8Array, file: string, part: number, runId: string): ParsedSegment {
  const text = decodeUtf8(bytes);
  if (text === undefined) throw new ControlPlaneCorrupt(`${file}: not valid UTF-8`, file);
  const lines = text.split("\n");
  const terminated = text.endsWith("\n");
  if (terminated) lines.pop();
  const out: ParsedSegment = { part, file, events: [] };
  lines.forEach((line, i) => {
    const lineNo = i + 1;
    if (line.trim() === "") return;
    let value: unknown;
    try {
      // Exact numbers: a record's integers beyond 2^53 and its `1.0` floats reach projection and snapshots as written.
      value = parseJsonExact(line, "event");
    } catch (e) {
      // Only an unterminated final line can be a torn write; whether it may be dropped depends on the run.
      if (!terminated && i === lines.length - 1) {
        out.torn = lineNo;
        return;
      }
      throw new ControlPlaneCorrupt(
        `${file}:${lineNo}: malformed JSON line (${(e as Error).message})`,
        file,
        lineNo,
      );
    }
    const event = validateEvent(value, file, lineNo);
    if (event.run_id !== runId) {
      throw new ControlPlaneCorrupt(
        `${file}:${lineNo}: event run_id ${event.run_id} is not ${runId}`,
        file,
        lineNo,
      );
    }
    out.events.push(event);
  });
  return out;
}

/** Torn-tail rule of the facts file: at most once per run, in the last segment of a live run or before only terminal events. */
function checkTornTails(segments: ParsedSegment[], terminal: boolean): ParsedSegment | undefined {
  const torn = segments.filter((s) => s.torn !== undefined);
  if (torn.length === 0) return undefined;
  if (torn.length > 1) {
    const second = torn[1]!;
    throw new ControlPlaneCorrupt(
      `${second.file}:${second.torn}: second torn tail in one run`,
      second.file,
      second.torn,
    );
  }
  const t = torn[0]!;
  const position = segments.indexOf(t);
  const later = segments.slice(position + 1).flatMap((s) => s.events);
  const isLast = position === segments.length - 1;
  const allowed = isLast
    ? !terminal
    : later.length > 0 && later.every((e) => TERMINAL_EVENTS.has(e.event_type));
  if (!allowed) {
    throw new ControlPlaneCorrupt(
      `${t.file}:${t.torn}: torn line not allowed here (${isLast ? "run is terminal" : "later non-terminal events exist"})`,
      t.file,
      t.torn,
    );
  }
  return t;
}

/** Says from a valid run.json alone that a run's events are not needed (its segments are then not read). */
export type SkipRun = (record: RunRecordDoc) => boolean;

/** Reads one run directory; undefined for a run that is only a 0-byte run.json (a peer's first write in flight) or skipped. */
export async function readRun(
  store: Store,
  runId: string,
  keys: string[],
  now: number,
  skip?: SkipRun,
): Promise<RunView | undefined> {
  const prefix = runPrefix(runId);
  const parts = keys
    .map((k) => k.slice(prefix.length))
    .map((name) => segmentNumber(name))
    .filter((n): n is number => n !== undefined)
    .sort((a, b) => a - b);
  const metaKey = `${prefix}run.json`;
  const metaBytes = keys.includes(metaKey) ? await store.get(metaKey) : undefined;
  if (metaBytes !== undefined && metaBytes.length === 0 && parts.length === 0) return undefined;

  let record: RunRecordDoc | undefined;
  let problem: string | undefined;
  if (metaBytes !== undefined) {
    try {
      record = validateRunRecord(parseDocument(metaBytes, metaKey), metaKey, runId);
    } catch (e) {
      problem = (e as Error).message;
    }
  }
  if (record && skip?.(record)) return undefined;

  // A run ends when run.json says so, as the reference reads it: its maintenance runs and time-coordinate
  // consolidations end with maintenance_* or consolidated_time_coord events and a terminal run.json, with
  // no run_* event. A terminal WAL event ends it too, for a writer that died before its last run.json.
  const byRecord = record && isTerminalStatus(record.status) ? TERMINAL_STATUS[record.status] : undefined;
  let events: WalEvent[] = [];
  let terminalEvent: WalEvent | undefined;
  let torn: ParsedSegment | undefined;
  let corrupt: ControlPlaneCorrupt | undefined;
  try {
    const segments: ParsedSegment[] = [];
    for (const part of parts) {
      const file = `${prefix}${keys.find((k) => segmentNumber(k.slice(prefix.length)) === part)!.slice(prefix.length)}`;
      const bytes = await store.get(file);
      if (bytes === undefined) continue; // deleted between list and get
      segments.push(parseSegment(bytes, file, part, runId));
    }
    events = segments.flatMap((s) => s.events);
    terminalEvent = [...events].reverse().find((e) => TERMINAL_EVENTS.has(e.event_type));
    torn = checkTornTails(segments, byRecord !== undefined || terminalEvent !== undefined);
  } catch (e) {
    // One run's bad segment is that run's problem: the product's other runs still list and recover.
    if (!(e instanceof ControlPlaneCorrupt)) throw e;
    corrupt = e;
    events = [];
    terminalEvent = undefined;
    torn = undefined;
  }
  const byWal = terminalEvent ? TERMINAL_STATE[terminalEvent.event_type] : undefined;

  const state: RunState = byRecord ?? byWal ?? (record ? "live" : "orphaned");
  const orphanReason: OrphanReason | undefined = record
    ? undefined
    : metaBytes === undefined
      ? "missing_run_meta"
      : "unreadable_run_meta";

  const lastEventAt = events.length > 0 ? Math.max(...events.map((e) => e.timestamp)) : undefined;
  const updatedAt = approximateNumber(record?.updated_at) ?? lastEventAt;
  const staleThresholdS = approximateNumber(record?.run_stale_threshold_s) ?? DEFAULT_RUN_STALE_S;
  const live = state === "live" || state === "orphaned";
  const view: RunView = {
    runId,
    state,
    events,
    segments: parts,
    staleThresholdS,
    stale: live && (updatedAt === undefined || now - updatedAt > staleThresholdS),
  };
  if (orphanReason) view.orphanReason = orphanReason;
  if (problem) view.problem = problem;
  if (record) view.record = record;
  if (updatedAt !== undefined) view.updatedAt = updatedAt;
  // The reference orders a terminal run.json by its completed_at, 0 when it has none.
  if (byRecord) view.completedAt = approximateNumber(record?.completed_at) ?? 0;
  else if (terminalEvent) {
    view.completedAt = approximateNumber(record?.completed_at) ?? terminalEvent.timestamp;
    view.recordLags = true;
  }
  if (torn) view.tornTail = { file: torn.file, line: torn.torn! };
  if (corrupt) view.corrupt = corrupt;
  return view;
}

/** Every run under `.firecube/runs/`, sorted by run id (minus those `skip` rules out from run.json). */
export async function readRuns(store: Store, clock: Clock, skip?: SkipRun): Promise<RunView[]> {
  const now = clock();
  const byRun = new Map<string, string[]>();
  for (const key of await store.list(RUNS_PREFIX)) {
    const rest = key.slice(RUNS_PREFIX.length);
    const slash = rest.indexOf("/");
    if (slash <= 0) continue;
    const runId = rest.slice(0, slash);
    if (rest.indexOf("/", slash + 1) !== -1) continue; // nested files are not ours
    const list = byRun.get(runId) ?? [];
    list.push(key);
    byRun.set(runId, list);
  }
  const views: RunView[] = [];
  for (const runId of [...byRun.keys()].sort()) {
    const view = await readRun(store, runId, byRun.get(runId)!, now, skip);
    if (view) views.push(view);
  }
  return views;
}

export function isLive(view: RunView): boolean {
  return view.state === "live" || view.state === "orphaned";
}
