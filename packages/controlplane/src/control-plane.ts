import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { ProtocolError, SchemaError } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { abandonStoredRun, readOneRun, repairRunRecord } from "./abandon-run.js";
import { type ClaimObserver, monotonicObserver } from "./claim-observer.js";
import * as claims from "./claims.js";
import {
  type ClaimDoc,
  type Clock,
  isObject,
  type JsonObject,
  type RunRecordDoc,
  systemClock,
} from "./documents.js";
import { HeldClaims } from "./held-claims.js";
import type { SlotIndexModel } from "./identity.js";
import { assertRunId, ROOT, runRecordKey } from "./layout.js";
import { type HistoryEntry, history, type ProjectedState, projectRuns } from "./projection.js";
import { envelopeJson, utf8 } from "./pyjson.js";
import {
  type EnsureContext,
  type EnsureResult,
  ensureResolvedIndex,
  type IndexVerification,
  type ResolvedIndexDeclaration,
  verifyResolvedIndex,
} from "./resolved-index.js";
import { type RootAttributes, zarrJsonAttributes } from "./root-attributes.js";
import {
  checkSlotRange,
  defaultRunId,
  runPayload,
  type StartRunOptions,
  slotOf,
  startedRunRecord,
} from "./run-documents.js";
import { ensureSchemaDoc, readSchemaDoc } from "./schema-doc.js";
import { ensureSlotIndexModel, type SlotIndexOutcome } from "./slot-index.js";
import * as snapshots from "./snapshots.js";
import { sealTornSegment } from "./torn-tail.js";
import { DEFAULT_RUN_STALE_S, type RunView, readRuns } from "./wal-reader.js";
import { eventTypeForStatus, RunWriter, runRecordDocument } from "./wal-writer.js";

export type { StartRunOptions } from "./run-documents.js";

export interface ControlPlaneOptions {
  /** Logical product name recorded in every document. */
  product: string;
  /** Clock in Unix seconds; injected so staleness boundaries are testable exactly. */
  now?: Clock;
  /** Claim and lock owner id; default host:pid:random. */
  ownerId?: string;
  runStaleThresholdS?: number;
  /** run.json heartbeat timer period; 0 disables the timer (heartbeats still happen on append). */
  runHeartbeatIntervalS?: number;
  claimStaleThresholdS?: number;
  /** Claim heartbeat timer period; 0 disables the timer. */
  claimHeartbeatIntervalS?: number;
  /** Where the resolved index is mirrored; default the store's root zarr.json. */
  rootAttributes?: RootAttributes;
  snapshotKeep?: number;
  compactLockStaleS?: number;
  /** How long ensureResolvedIndex waits for a peer holding the index claim (real seconds). */
  claimWaitS?: number;
  /** The clock that judges whether a claim's version stopped changing; default the process's monotonic clock. */
  observer?: ClaimObserver;
  /** Called when a background heartbeat fails (e.g. the claim was cleared by an operator). */
  onHeartbeatError?: (error: unknown) => void;
}

function defaultOwnerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
}

/**
 * One process's handle on a product's `.firecube/` control plane: runs and their WAL, claims, snapshots
 * and the resolved index. Every document goes through the Store, so the same code serves a filesystem
 * and an object store.
 */
export class ControlPlane {
  readonly store: Store;
  readonly product: string;
  readonly ownerId: string;
  readonly clock: Clock;
  private readonly opts: ControlPlaneOptions;
  private readonly attrs: RootAttributes;
  private readonly writers = new Map<string, RunWriter>();
  private readonly held: HeldClaims;
  private readonly observer: ClaimObserver;

  private constructor(store: Store, opts: ControlPlaneOptions) {
    this.store = store;
    this.opts = opts;
    this.product = opts.product;
    this.clock = opts.now ?? systemClock;
    this.ownerId = opts.ownerId ?? defaultOwnerId();
    this.attrs = opts.rootAttributes ?? zarrJsonAttributes(store);
    this.observer = opts.observer ?? monotonicObserver;
    this.held = new HeldClaims({
      store,
      ownerId: this.ownerId,
      product: this.product,
      clock: this.clock,
      heartbeatIntervalS: opts.claimHeartbeatIntervalS ?? claims.DEFAULT_CLAIM_HEARTBEAT_S,
      staleThresholdS: opts.claimStaleThresholdS ?? claims.DEFAULT_CLAIM_STALE_S,
      onHeartbeatError: opts.onHeartbeatError,
    });
  }

  /**
   * Opens (does not create) the control plane; an existing schema.json must be v2 / chunkmanager-v2. A
   * store that stages writes in files of its own keeps them out of `.firecube/`'s directories from now
   * on: the reference reads every file in claims/ as a claim and every `*.jsonl` in a run directory.
   */
  static async open(store: Store, opts: ControlPlaneOptions): Promise<ControlPlane> {
    if (typeof opts?.product !== "string" || opts.product === "") {
      throw new SchemaError("product must be a non-empty string", "/product", "control plane options");
    }
    store.stageApart?.(ROOT);
    const cp = new ControlPlane(store, opts);
    await readSchemaDoc(store);
    return cp;
  }

  private writer(runId: string): RunWriter {
    const w = this.writers.get(runId);
    if (!w) throw new ProtocolError(`run ${runId} is not open in this process (startRun or resumeRun first)`);
    return w;
  }

  private runPayload(runId: string, status: string, o: StartRunOptions & { error?: string }): JsonObject {
    return runPayload(this, runId, status, this.clock(), o);
  }

  private newWriter(record: RunRecordDoc, nextPart: number): RunWriter {
    const w = new RunWriter({
      store: this.store,
      clock: this.clock,
      record,
      nextPart,
      heartbeatIntervalS: this.opts.runHeartbeatIntervalS ?? 30,
      appendHeartbeatMinS: 1,
      onHeartbeatError: this.opts.onHeartbeatError ?? (() => undefined),
    });
    this.writers.set(record.run_id, w);
    return w;
  }

  /** Creates runs/<id>/run.json (create-only) and writes the run_started segment. Returns the run id. */
  async startRun(o: StartRunOptions = {}): Promise<string> {
    const now = this.clock();
    const runId = o.runId ?? defaultRunId(now);
    assertRunId(runId);
    checkSlotRange(o.slotRange);
    const staleThresholdS = this.opts.runStaleThresholdS ?? DEFAULT_RUN_STALE_S;
    const record = startedRunRecord(this, runId, now, staleThresholdS, o);
    const payload = this.runPayload(runId, "started", o);
    const first =
      o.replaces && o.replaces.length > 0
        ? { type: "run_started_with_replacement", record: { ...payload, replaces: [...o.replaces] } }
        : { type: "run_started", record: payload };
    // Printed before anything is written: a meta value that cannot be written exactly leaves no run behind.
    envelopeJson(first.record, `${first.type} record`);
    await ensureSchemaDoc(this.store, this.clock);
    if (!(await this.store.putIfAbsent(runRecordKey(runId), utf8(envelopeJson(runRecordDocument(record)))))) {
      throw new ProtocolError(`run ${runId} already exists (use resumeRun to reopen it)`);
    }
    const w = this.newWriter(record, 0);
    await w.append(first.type, first.record);
    return runId;
  }

  /** Reopens a live run written earlier (this or a crashed process); new segments start at max(existing)+1. */
  async resumeRun(runId: string): Promise<RunView> {
    assertRunId(runId);
    const view = await readOneRun(this.store, this.clock, runId);
    if (!view) throw new ProtocolError(`run ${runId} does not exist`);
    if (view.corrupt) throw new ProtocolError(`run ${runId} cannot be resumed: ${view.corrupt.message}`);
    if (view.state !== "live" || !view.record) {
      throw new ProtocolError(`run ${runId} cannot be resumed: it is ${view.orphanReason ?? view.state}`);
    }
    if (view.tornTail) await sealTornSegment(this.store, view.tornTail.file);
    const nextPart = view.segments.length > 0 ? view.segments.at(-1)! + 1 : 0;
    this.newWriter({ ...view.record, parts: view.segments.length, events: view.events.length }, nextPart);
    return view;
  }

  async appendEvent(runId: string, eventType: string, record: JsonObject): Promise<string> {
    if (typeof eventType !== "string" || eventType === "" || !isObject(record)) {
      throw new SchemaError("appendEvent needs an event type and a record object", "/record", "event");
    }
    return this.writer(runId).append(eventType, record);
  }

  /** Appends a chunk/span record with the event type its status selects (active -> span_committed, ...). */
  async appendRecord(runId: string, record: JsonObject): Promise<string> {
    return this.appendEvent(runId, eventTypeForStatus(record.status), record);
  }

  async flushRun(runId: string): Promise<void> {
    return this.writer(runId).flush();
  }

  async heartbeatRun(runId: string): Promise<void> {
    return this.writer(runId).heartbeat();
  }

  async completeRun(runId: string, o: { meta?: JsonObject } = {}): Promise<string> {
    const w = this.writer(runId);
    const r = w.snapshotRecord();
    const id = await w.finish(
      "run_completed",
      "complete",
      this.runPayload(runId, "complete", { ...o, ...slotOf(r) }),
    );
    this.writers.delete(runId);
    return id;
  }

  async failRun(runId: string, error: string, o: { meta?: JsonObject } = {}): Promise<string> {
    const w = this.writer(runId);
    const r = w.snapshotRecord();
    const payload = this.runPayload(runId, "failed", { ...o, error, ...slotOf(r) });
    const id = await w.finish("run_failed", "failed", payload, error);
    this.writers.delete(runId);
    return id;
  }

  /**
   * Marks a stale run abandoned: a new segment (max+1, create-only) holding run_abandoned, then run.json.
   * A fresh run needs force; an orphan gets a run.json so it stops counting as live.
   */
  async abandonRun(runId: string, o: { reason?: string; force?: boolean } = {}): Promise<string> {
    assertRunId(runId);
    const reason = o.reason ?? "abandoned";
    const own = this.writers.get(runId);
    if (own) {
      const r = own.snapshotRecord();
      const id = await own.finish(
        "run_abandoned",
        "abandoned",
        this.runPayload(runId, "abandoned", { error: reason, ...slotOf(r) }),
        reason,
      );
      this.writers.delete(runId);
      return id;
    }
    return abandonStoredRun(this, runId, reason, o.force ?? false);
  }

  /**
   * Recovery: writes the run.json of a run whose WAL ends it (`recordLags`) but whose run.json does not, as
   * its writer would have; false when there is nothing to repair or the run.json changed meanwhile.
   */
  repairRunRecord(view: RunView): Promise<boolean> {
    return repairRunRecord(this, view);
  }

  /** `category:name` -> the full `product:category:name` domain. */
  domain(categoryAndName: string): string {
    return claims.claimDomain(this.product, categoryAndName);
  }

  /** Create-only acquisition of `product:<categoryAndName>`, then a background heartbeat (unref'd). */
  async acquireClaim(categoryAndName: string): Promise<ClaimDoc> {
    return this.held.acquire(this.domain(categoryAndName));
  }

  /** Refreshes one claim we hold (a conditional write); a claim we lost is a ClaimLost. */
  heartbeat(categoryAndName: string): Promise<ClaimDoc> {
    return this.held.heartbeat(this.domain(categoryAndName));
  }

  /**
   * The fence a writer calls before every commit: resolves when the claim is still the version this
   * process last wrote, throws ClaimLost when it was cleared or taken over (then the writer must stop).
   */
  async assertClaimHeld(categoryAndName: string): Promise<void> {
    return this.held.assertHeld(this.domain(categoryAndName));
  }

  /** Deletes our claim; a claim this process held but lost is a ClaimLost and is left to its new holder. */
  async releaseClaim(categoryAndName: string): Promise<void> {
    return this.held.release(this.domain(categoryAndName));
  }

  /**
   * Recovery: clears a claim by its full `product:category:name` domain. Without force it must be stale
   * and show no heartbeat while observed for its threshold; with force any claim, even an unreadable one.
   */
  clearClaim(fullDomain: string, o: { force?: boolean } = {}): Promise<claims.ClearedClaim | undefined> {
    return claims.clear(this.store, fullDomain, this.clock, o.force ?? false, this.observer);
  }

  sweepStaleClaims(o: { dryRun?: boolean } = {}): Promise<claims.ClearedClaim[]> {
    return claims.sweepStale(this.store, this.clock, this.observer, o.dryRun ?? false);
  }

  listClaims(): Promise<claims.ClaimView[]> {
    return claims.listClaims(this.store, this.clock());
  }

  /** Readable claims and unreadable claim files. */
  scanClaims(): Promise<{ claims: claims.ClaimView[]; corrupt: claims.CorruptClaim[] }> {
    return claims.scanClaims(this.store, this.clock());
  }

  listRuns(): Promise<RunView[]> {
    return readRuns(this.store, this.clock);
  }

  async history(): Promise<HistoryEntry[]> {
    return history(await this.listRuns());
  }

  /** Current state: snapshot + replay of later runs, or a full replay when the snapshot is missing or corrupt. */
  project(): Promise<snapshots.ReadStateResult> {
    return snapshots.readState(this.store, this.clock);
  }

  /** Current state from the WAL alone. */
  async replay(): Promise<ProjectedState> {
    return projectRuns(await this.listRuns());
  }

  rebuildSnapshot(o: { keep?: number } = {}): Promise<snapshots.RebuildResult> {
    const opts: snapshots.RebuildOptions = {
      product: this.product,
      ownerId: this.ownerId,
      clock: this.clock,
    };
    const keep = o.keep ?? this.opts.snapshotKeep;
    if (keep !== undefined) opts.keep = keep;
    if (this.opts.compactLockStaleS !== undefined) opts.lockStaleS = this.opts.compactLockStaleS;
    return snapshots.rebuildSnapshot(this.store, opts);
  }

  snapshotStatus(): Promise<snapshots.SnapshotStatus> {
    return snapshots.snapshotStatus(this.store);
  }

  private ensureContext(runId: string): EnsureContext {
    const w = this.writer(runId);
    const ctx: EnsureContext = {
      store: this.store,
      product: this.product,
      ownerId: this.ownerId,
      clock: this.clock,
      attrs: this.attrs,
      emit: (type, record) => w.append(type, record),
    };
    if (this.opts.claimWaitS !== undefined) ctx.claimWaitS = this.opts.claimWaitS;
    return ctx;
  }

  /** Precedence rows 1-7 under the `resolved_index:current` claim; records an index_ensured event in the run. */
  async ensureResolvedIndex(
    declaration: ResolvedIndexDeclaration,
    o: { runId: string },
  ): Promise<EnsureResult> {
    return ensureResolvedIndex(this.ensureContext(o.runId), declaration, o.runId, "ensure");
  }

  /** Writes a missing record or re-mirrors attrs from a matching one; never overwrites a divergent record. */
  async rebuildResolvedIndex(
    declaration: ResolvedIndexDeclaration,
    o: { runId: string },
  ): Promise<EnsureResult> {
    return ensureResolvedIndex(this.ensureContext(o.runId), declaration, o.runId, "rebuild");
  }

  verifyResolvedIndex(): Promise<IndexVerification> {
    return verifyResolvedIndex(this.store, this.attrs);
  }

  readRootAttributes(): Promise<JsonObject | undefined> {
    return this.attrs.read();
  }

  /** Slot-index model record with the resolved index's precedence rows, under `slot_index_model:current`. */
  async ensureSlotIndexModel(
    model: SlotIndexModel,
    o: { runId: string },
  ): Promise<{ outcome: SlotIndexOutcome; identityHash: string; row: number }> {
    return ensureSlotIndexModel(this.ensureContext(o.runId), model, o.runId);
  }

  /** Flushes open runs (they stay live) and stops every timer. Claims are left held. */
  async close(): Promise<void> {
    this.held.stopHeartbeats();
    for (const w of this.writers.values()) await w.close();
    this.writers.clear();
  }
}
