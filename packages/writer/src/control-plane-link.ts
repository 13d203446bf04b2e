import {
  ControlPlane,
  type ControlPlaneOptions,
  eventTypeForStatus,
  type JsonObject,
} from "@zarr-stream/controlplane";
import {
  canonicalRegionJson,
  ProtocolError,
  type Region,
  type StreamSchema,
  type TokenRecord,
} from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { indexedTimes } from "./indexed-times.js";

/** `ZarrStreamWriter` options that run the writer under a `.firecube/` control plane. */
export interface WriterControlPlaneOptions {
  /** Logical product name recorded in every control-plane document. */
  product: string;
  /** Run id for the owner's run (default: generated). */
  runId?: string;
  /** Group name used in claim domains and span keys (default "root": the store's root group). */
  group?: string;
  /** Passed on to the control plane: clock, owner id, staleness thresholds, heartbeat periods. */
  options?: Omit<ControlPlaneOptions, "product">;
}

export interface LinkRole {
  isOwner: boolean;
  nWriters: number;
  append: boolean;
  namedRegion: Region;
}

/** Inclusive [first, last] runs of sorted record indices, as span records spell time_index_ranges. */
export function inclusiveRanges(indices: number[]): [number, number][] {
  const out: [number, number][] = [];
  for (const i of indices) {
    const last = out[out.length - 1];
    if (last && i === last[1] + 1) last[1] = i;
    else out.push([i, i]);
  }
  return out;
}

const DEFAULT_GROUP = "root";

/** What one owner commit adds to the WAL: its span. */
export interface CommittedRecord {
  kind: "committed";
  commitSeq: number;
  records: TokenRecord[];
  arrays: string[];
  regionDims: string[];
}

/**
 * The WAL record a manifest write owes once it lands (writer-decisions.md rule 18): a commit's span, an
 * invalidate's replaced spans, a truncating resume's replacement. Plain data, so a manifest write settled
 * later still knows what it owes.
 */
export type SpanRecord =
  | CommittedRecord
  | { kind: "invalidated"; commitSeq: number; indices: number[] }
  | { kind: "truncated"; keep: number; dropped: number };

/** One WAL event, composed but not yet appended. */
interface WalDraft {
  eventType: string;
  record: JsonObject;
}

/** A record owed to the WAL: its events once composed, those not yet appended. */
interface Owed {
  record?: SpanRecord;
  events?: WalDraft[];
}

interface ProjectedSpan {
  key: string;
  runId: string | undefined;
  ranges: [number, number][];
}

/** The active spans of `group` in the control plane's current projection (complete runs only). */
async function projectedSpans(cp: ControlPlane, group: string): Promise<ProjectedSpan[]> {
  const out: ProjectedSpan[] = [];
  for (const [key, rec] of (await cp.project()).state) {
    const span = rec.span as { time_index_ranges?: [number, number][] } | undefined;
    const meta = rec.meta as { group?: string; run_id?: string } | undefined;
    if (rec.status !== "active" || meta?.group !== group || !span?.time_index_ranges) continue;
    out.push({ key, runId: meta.run_id, ranges: span.time_index_ranges });
  }
  return out;
}

/**
 * The stream schema as the resolved-index declaration (packages/spec/docs/writer-control-plane.md): the
 * fingerprint carries every field writers must agree on; the readable fields give a useful field diff.
 */
export function schemaDeclaration(schema: StreamSchema, fingerprint: string, group: string): JsonObject {
  return {
    name: `zarr-stream/${group}`,
    schema_version: "v1",
    groups: {
      [group]: {
        kind: schema.time_mode === "append" ? "append" : "indexed",
        params: {
          fingerprint,
          time_dim: schema.time_dim,
          profile: schema.profile,
          dims: Object.fromEntries(schema.dims.map(([d, n]) => [d, d === schema.time_dim ? 0 : n])),
          vars: schema.vars.map((v) => `${v.name}:${v.dtype}:${v.dims.join(",")}`),
          statics: schema.statics.map((v) => `${v.name}:${v.dtype}:${v.dims.join(",")}`),
        },
        size: indexedTimes(schema)?.length ?? 0,
      },
    },
  };
}

/**
 * One writer's presence in the control plane: its claims (the owner's schema claim and every writer's
 * region claim, so a second process opening the same role or region fails fast with ClaimConflict), and
 * for the owner the run whose WAL records every commit.
 */
export class ControlPlaneLink {
  private readonly spans = new Map<string, number[]>();
  /** Span keys this run has replaced; its events feed the projection only once the run completes. */
  private readonly replaced = new Set<string>();
  private finished = false;
  /** Records whose landed commit the WAL does not show yet, oldest first (rule 20). */
  private readonly owed: Owed[] = [];
  /** An append failed after the run writer buffered its event: a flush is owed. */
  private unflushed = false;

  private constructor(
    readonly cp: ControlPlane,
    readonly group: string,
    private readonly claims: string[],
    readonly runId: string | undefined,
  ) {}

  static async open(
    store: Store,
    o: WriterControlPlaneOptions,
    role: LinkRole,
    mode: "create" | "join" | "resume",
    replaces: string[] = [],
  ): Promise<ControlPlaneLink> {
    const cp = await ControlPlane.open(store, { ...(o.options ?? {}), product: o.product });
    const group = o.group ?? DEFAULT_GROUP;
    const held: string[] = [];
    try {
      if (role.isOwner) {
        if (mode === "resume") {
          const live = (await cp.listRuns()).filter(
            (r) => (r.state === "live" || r.state === "orphaned") && !r.stale,
          );
          if (live.length > 0) {
            throw new ProtocolError(
              `run ${live[0]!.runId} of ${o.product} is still live: abandon it (zstream cp runs abandon, or zstream recover once it is stale) before resuming`,
            );
          }
        }
        const schemaClaim =
          role.nWriters === 1 && role.append ? `zarr_append:${group}` : `zarr_region:${group}:schema`;
        await cp.acquireClaim(schemaClaim);
        held.push(schemaClaim);
      }
      const regionClaim = `zarr_region:${group}:region=${canonicalRegionJson(role.namedRegion)}`;
      await cp.acquireClaim(regionClaim);
      held.push(regionClaim);
      const runId = role.isOwner
        ? await cp.startRun({
            ...(o.runId !== undefined ? { runId: o.runId } : {}),
            outputPath: store.url,
            outputFormat: "zarr",
            replaces,
          })
        : undefined;
      return new ControlPlaneLink(cp, group, held, runId);
    } catch (err) {
      for (const c of held) await cp.releaseClaim(c).catch(() => {});
      await cp.close();
      throw err;
    }
  }

  /** Precedence rows of the resolved index: a changed schema pointed at an existing store is refused. */
  async ensureSchema(schema: StreamSchema, fingerprint: string): Promise<void> {
    if (this.runId === undefined) return;
    await this.cp.ensureResolvedIndex(
      { index: schemaDeclaration(schema, fingerprint, this.group) },
      { runId: this.runId },
    );
  }

  private spanKey(commitSeq: number): string {
    return `span_${this.runId}_${commitSeq}_${this.group}`;
  }

  /**
   * Writes `record` to the run's WAL behind every record still owed. The commit it describes has landed,
   * so a control-plane failure here leaves the record owed (the error is rethrown for the caller to
   * swallow) and the next record, the next commit or close pays it first: the WAL stays in commit order.
   */
  async record(record: SpanRecord): Promise<void> {
    if (this.runId === undefined) return;
    this.owed.push({ record });
    await this.payOwed();
  }

  /** Writes every owed record, oldest first; throws, leaving them owed, when the control plane fails. */
  async payOwed(): Promise<void> {
    const runId = this.runId;
    if (runId === undefined) return;
    if (this.unflushed) {
      await this.cp.flushRun(runId);
      this.unflushed = false;
    }
    while (this.owed.length > 0) {
      const head = this.owed[0]!;
      head.events ??= await this.compose(head.record!);
      while (head.events.length > 0) {
        const event = head.events.shift()!;
        try {
          await this.cp.appendEvent(runId, event.eventType, event.record);
        } catch (err) {
          // The run writer keeps an event whose segment or run.json write failed in its buffer: it is
          // owed a flush, not a second append, which would record it twice.
          this.unflushed = true;
          throw err;
        }
      }
      this.owed.shift();
    }
  }

  /** The WAL events of `record`; reads the projection (invalidate, truncate) but writes nothing. */
  private async compose(record: SpanRecord): Promise<WalDraft[]> {
    switch (record.kind) {
      case "committed":
        return [this.committedEvent(record)];
      case "invalidated":
        return this.invalidatedEvents(record.commitSeq, record.indices);
      case "truncated":
        return [await this.truncatedEvent(record.keep, record.dropped)];
    }
  }

  /** One span_committed event per owner commit. */
  private committedEvent(c: CommittedRecord): WalDraft {
    const key = this.spanKey(c.commitSeq);
    const indices = c.records.map((r) => r.index);
    const ts = c.records.map((r) => r.t);
    const meta: JsonObject = { region_dims: c.regionDims };
    if (ts.length > 0) Object.assign(meta, { time_min: Math.min(...ts), time_max: Math.max(...ts) });
    return this.spanEvent(this.runId!, key, String(c.commitSeq), c.commitSeq, meta, indices, ts, c.arrays);
  }

  /** An active span record (facts file's span payload) holding `indices`. */
  private spanEvent(
    runId: string,
    key: string,
    batchId: string,
    commitSeq: number,
    meta: JsonObject,
    indices: number[],
    timestamps: number[],
    arrays: string[],
  ): WalDraft {
    this.spans.set(key, indices);
    return {
      eventType: eventTypeForStatus("active"),
      record: {
        key,
        type: "span",
        size: 0,
        timestamp: this.cp.clock(),
        status: "active",
        meta: { group: this.group, batch_id: batchId, run_id: runId, commit_seq: commitSeq, ...meta },
        span: {
          arrays,
          time_index_ranges: inclusiveRanges(indices),
          timestamps_written: timestamps,
          aligned: true,
          state_array: "",
          state_deleted_value: 2,
        },
        schema_version: "v2",
      },
    };
  }

  /** Spans (of this run, or projected from earlier runs) holding any of `indices`. */
  private async spansHolding(indices: Set<number>): Promise<string[]> {
    const keys = new Set<string>();
    for (const [key, held] of this.spans) if (held.some((i) => indices.has(i))) keys.add(key);
    for (const { key, ranges } of await projectedSpans(this.cp, this.group)) {
      if (ranges.some(([a, b]) => [...indices].some((i) => a <= i && i <= b))) keys.add(key);
    }
    return [...keys].sort();
  }

  /** invalidate: every span holding an invalidated record gets a record_replaced event. */
  private async invalidatedEvents(commitSeq: number, indices: number[]): Promise<WalDraft[]> {
    const runId = this.runId!;
    const keys = await this.spansHolding(new Set(indices));
    for (const key of keys) {
      this.spans.delete(key);
      this.replaced.add(key);
    }
    return keys.map((key) => ({
      eventType: eventTypeForStatus("replaced"),
      record: {
        key,
        type: "span",
        size: 0,
        timestamp: this.cp.clock(),
        status: "replaced",
        meta: { group: this.group, run_id: runId, commit_seq: commitSeq, invalidated: indices },
        schema_version: "v2",
      },
    }));
  }

  /** Truncate-on-resume: the dropped records' spans are replaced by this run (idempotent). */
  private async truncatedEvent(keep: number, dropped: number): Promise<WalDraft> {
    const gone = new Set(Array.from({ length: dropped - keep }, (_, i) => keep + i));
    const keys = await this.spansHolding(gone);
    for (const k of keys) this.replaced.add(k);
    return {
      eventType: "replacement_committed",
      record: { replacing_run_id: this.runId!, replaced_span_keys: keys },
    };
  }

  /**
   * Resume after a crash: records committed by a run that never completed (abandoned, failed) feed no
   * projection. The resuming run adopts them with one span, so the projection shows every committed
   * record exactly once.
   */
  async adoptCommitted(committed: number[], commitSeq: number): Promise<void> {
    if (this.runId === undefined || committed.length === 0) return;
    // The truncation's record comes first: adoption reads the projection it feeds.
    await this.payOwed();
    const covered = new Set<number>();
    for (const { key, ranges } of await projectedSpans(this.cp, this.group)) {
      if (this.replaced.has(key)) continue;
      for (const [a, b] of ranges) for (let i = a; i <= b; i++) covered.add(i);
    }
    const orphaned = committed.filter((i) => !covered.has(i));
    if (orphaned.length === 0) return;
    const key = `span_${this.runId}_adopted_${this.group}`;
    this.owed.push({
      events: [this.spanEvent(this.runId, key, "adopted", commitSeq, { adopted: true }, orphaned, [], [])],
    });
    await this.payOwed();
  }

  /** Runs whose projected spans hold records at or after `keep` (informational `replaces`). */
  static async runsHoldingFrom(store: Store, o: WriterControlPlaneOptions, keep: number): Promise<string[]> {
    const cp = await ControlPlane.open(store, { ...(o.options ?? {}), product: o.product });
    try {
      const runs = new Set<string>();
      for (const { runId, ranges } of await projectedSpans(cp, o.group ?? DEFAULT_GROUP)) {
        if (runId !== undefined && ranges.some(([, b]) => b >= keep)) runs.add(runId);
      }
      return [...runs].sort();
    } finally {
      await cp.close();
    }
  }

  /** Throws ClaimLost once recovery cleared (or another process took) a claim of this writer. */
  async assertClaimsHeld(): Promise<void> {
    for (const c of this.claims) await this.cp.assertClaimHeld(c);
  }

  /** close: run_completed (owner), claims released. */
  async complete(): Promise<void> {
    await this.finish(async () => {
      const runId = this.runId;
      if (runId === undefined) return;
      await this.payOwed();
      // A run end whose write failed stays buffered in the run writer, so one retry writes that same event.
      await this.cp.completeRun(runId).catch(() => this.cp.completeRun(runId));
    });
  }

  /** An exception ends the owner's run run_failed; claims are released either way. */
  async fail(error: unknown): Promise<void> {
    await this.finish(async () => {
      if (this.runId === undefined) return;
      // The run fails either way; what the records could not write is left out, not the failure.
      await this.payOwed().catch(() => {});
      await this.cp.failRun(this.runId, error instanceof Error ? error.message : String(error));
    });
  }

  private async finish(end: () => Promise<void>): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    try {
      await end();
    } finally {
      for (const c of this.claims) await this.cp.releaseClaim(c).catch(() => {});
      await this.cp.close();
    }
  }
}
