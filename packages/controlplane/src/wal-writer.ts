import { ProtocolError } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import {
  type Clock,
  isObject,
  type JsonObject,
  numeric,
  type RunRecordDoc,
  TERMINAL_EVENTS,
  type WalEvent,
} from "./documents.js";
import { eventId, runRecordKey, SEGMENT_EVENTS, segmentKey } from "./layout.js";
import { envelopeJson, utf8 } from "./pyjson.js";
import { sameBytes } from "./store-cas.js";

/** Events that must be durable before the caller moves on: run lifecycle, maintenance and replacement. */
export const IMMEDIATE_FLUSH: ReadonlySet<string> = new Set([
  "run_started",
  "run_started_with_replacement",
  "run_completed",
  "run_failed",
  "run_abandoned",
  "replacement_committed",
  "maintenance_started",
  "maintenance_completed",
  "maintenance_failed",
]);

/** Span and chunk record status -> event type, as the reference maps them. */
export function eventTypeForStatus(status: unknown): string {
  switch (status) {
    case "active":
      return "span_committed";
    case "failed":
      return "span_failed";
    case "skipped":
    case "noop":
      return "span_noop";
    case "replaced":
      return "record_replaced";
    default:
      return "record_upsert";
  }
}

/** run.json in the reference's key order; optional keys only when set. */
export function runRecordDocument(r: RunRecordDoc): RunRecordDoc {
  const doc: RunRecordDoc = {
    schema_version: "v2",
    product: r.product,
    run_id: r.run_id,
    status: r.status,
    parts: r.parts,
    events: r.events,
    started_at: r.started_at,
    updated_at: r.updated_at,
    run_uri: r.run_uri,
    run_stale_threshold_s: r.run_stale_threshold_s,
  };
  if (r.error !== undefined) doc.error = r.error;
  if (r.completed_at !== undefined) doc.completed_at = r.completed_at;
  if (r.slot_range !== undefined) doc.slot_range = r.slot_range;
  if (r.slot_group !== undefined) doc.slot_group = r.slot_group;
  // Keys a peer added within v2 (the reference writes timestamps_skipped) survive our rewrites.
  for (const [k, v] of Object.entries(r)) if (!(k in doc) && v !== undefined) doc[k] = v;
  return doc;
}

export function makeEvent(
  product: string,
  runId: string,
  id: string,
  eventType: string,
  timestamp: number,
  record: JsonObject,
): WalEvent {
  const event: WalEvent = {
    schema_version: "v2",
    event_id: id,
    event_type: eventType,
    product,
    run_id: runId,
    timestamp,
    record,
  };
  if (isObject(record.meta) && Object.keys(record.meta).length > 0) event.meta = { ...record.meta };
  return event;
}

export interface RunWriterInit {
  store: Store;
  clock: Clock;
  record: RunRecordDoc;
  /** First segment number to write: max(existing) + 1 when reopening a run. */
  nextPart: number;
  heartbeatIntervalS: number;
  /** run.json is rewritten on append at most this often (it is always rewritten on a segment flush). */
  appendHeartbeatMinS: number;
  onHeartbeatError?: (error: unknown) => void;
}

/**
 * Buffers one run's events into immutable segments of at most 25 events. Segments are written create-only,
 * so two processes that both believe they own a run fail instead of overwriting each other's events.
 * Operations are serialized so concurrent callers see a consistent part/index numbering.
 */
export class RunWriter {
  readonly runId: string;
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly record: RunRecordDoc;
  private readonly appendHeartbeatMinS: number;
  private nextPart: number;
  /**
   * Events printed as they are appended: a value that cannot be written exactly (InexactNumber) is refused
   * by append, before it is buffered, instead of failing the flush that would carry earlier events too.
   */
  private buffer: string[] = [];
  private chain: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /** run.json lags a landed segment: its write failed after the segment was created. */
  private recordOwed = false;
  /** The terminal event a failed finish left buffered or landed, which a retry finishes instead. */
  private terminal: { eventType: string; id: string } | undefined;

  constructor(init: RunWriterInit) {
    this.store = init.store;
    this.clock = init.clock;
    this.record = { ...init.record };
    this.runId = init.record.run_id;
    this.nextPart = init.nextPart;
    this.appendHeartbeatMinS = init.appendHeartbeatMinS;
    if (init.heartbeatIntervalS > 0) {
      this.timer = setInterval(() => {
        this.heartbeat().catch((e) => init.onHeartbeatError?.(e));
      }, init.heartbeatIntervalS * 1000);
      this.timer.unref();
    }
  }

  get status(): string {
    return this.record.status;
  }

  /** A copy of the run record as last written (or about to be). */
  snapshotRecord(): RunRecordDoc {
    return { ...this.record };
  }

  private serial<T>(op: () => Promise<T>): Promise<T> {
    const next = this.chain.then(op, op);
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Appends one event; returns its id. Flushes at 25 buffered events or on an immediate-flush event. */
  append(eventType: string, record: JsonObject): Promise<string> {
    return this.serial(async () => {
      if (this.closed) throw new ProtocolError(`run ${this.runId} is closed (${this.record.status})`);
      const id = eventId(this.runId, this.nextPart, this.buffer.length);
      this.buffer.push(
        this.print(makeEvent(this.record.product, this.runId, id, eventType, this.clock(), record)),
      );
      if (IMMEDIATE_FLUSH.has(eventType) || this.buffer.length >= SEGMENT_EVENTS) await this.flushNow();
      else if (this.clock() - numeric(this.record.updated_at) >= this.appendHeartbeatMinS)
        await this.writeRecord();
      return id;
    });
  }

  /** Writes buffered events as a new segment (no-op when empty). */
  flush(): Promise<void> {
    return this.serial(() => this.flushNow());
  }

  /** Refreshes run.json's updated_at (atomic replace). */
  heartbeat(): Promise<void> {
    return this.serial(async () => {
      if (!this.closed) await this.writeRecord();
    });
  }

  /** Appends a terminal event, flushes, records the terminal status and stops the heartbeat. */
  async finish(eventType: string, status: string, record: JsonObject, error?: string): Promise<string> {
    if (!TERMINAL_EVENTS.has(eventType)) throw new ProtocolError(`${eventType} is not a terminal run event`);
    return this.serial(async () => {
      if (this.closed) throw new ProtocolError(`run ${this.runId} is already ${this.record.status}`);
      if (this.terminal === undefined) {
        const now = this.clock();
        const id = eventId(this.runId, this.nextPart, this.buffer.length);
        this.buffer.push(this.print(makeEvent(this.record.product, this.runId, id, eventType, now, record)));
        this.record.status = status;
        this.record.completed_at = now;
        if (error !== undefined) this.record.error = error;
        this.terminal = { eventType, id };
      } else if (this.terminal.eventType !== eventType) {
        // The first terminal event may have landed already: the run's end is decided.
        throw new ProtocolError(`run ${this.runId} is already ending with ${this.terminal.eventType}`);
      }
      await this.flushNow();
      this.stop();
      return this.terminal.id;
    });
  }

  /**
   * Flushes what is buffered and stops the heartbeat timer without a terminal event (the run stays live).
   * The timer stops even when the flush fails: a closed writer's heartbeat would keep the run looking alive.
   */
  close(): Promise<void> {
    return this.serial(async () => {
      try {
        await this.flushNow();
      } finally {
        this.stop();
      }
    });
  }

  private print(event: WalEvent): string {
    return envelopeJson(event, `WAL event ${event.event_id} (${event.event_type})`);
  }

  private stop(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Writes the buffer as the next segment, then run.json. A failure keeps what did not land: the buffer
   * when the segment did not, `recordOwed` when run.json did not, so calling again finishes the flush.
   */
  private async flushNow(): Promise<void> {
    if (this.buffer.length === 0) {
      if (this.recordOwed) await this.writeRecord();
      return;
    }
    const key = segmentKey(this.runId, this.nextPart);
    const bytes = utf8(`${this.buffer.join("\n")}\n`);
    if (!(await this.store.putIfAbsent(key, bytes)) && !(await this.holds(key, bytes))) {
      throw new ProtocolError(`${key} already exists: another process is writing run ${this.runId}`);
    }
    this.record.parts = numeric(this.record.parts) + 1;
    this.record.events = numeric(this.record.events) + this.buffer.length;
    this.nextPart += 1;
    this.buffer = [];
    await this.writeRecord();
  }

  /**
   * Whether `key` holds exactly `bytes`: then the segment is this writer's own, created by an earlier
   * attempt whose acknowledgement was lost. Its events carry this run's ids and times, so no other
   * process writes the same bytes.
   */
  private async holds(key: string, bytes: Uint8Array): Promise<boolean> {
    const there = await this.store.get(key);
    return there !== undefined && sameBytes(there, bytes);
  }

  private async writeRecord(): Promise<void> {
    this.recordOwed = true;
    this.record.updated_at = this.clock();
    const doc = runRecordDocument(this.record);
    await this.store.put(runRecordKey(this.runId), utf8(envelopeJson(doc)));
    this.recordOwed = false;
  }
}
