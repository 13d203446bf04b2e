import { ControlPlane, type ControlPlaneOptions, type JsonObject } from "@zarr-stream/controlplane";
import {
  canonicalRegionJson,
  ProtocolError,
  type Region,
  type StreamSchema,
  type TokenRecord,
} from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { indexedTimes } from "./time-mode.js";

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

  /** One span_committed event per owner commit. */
  async committed(c: {
    commitSeq: number;
    records: TokenRecord[];
    arrays: string[];
    regionDims: string[];
  }): Promise<void> {
    if (this.runId === undefined) return;
    const key = this.spanKey(c.commitSeq);
    const indices = c.records.map((r) => r.index);
    const ts = c.records.map((r) => r.t);
    const meta: JsonObject = { region_dims: c.regionDims };
    if (ts.length > 0) Object.assign(meta, { time_min: Math.min(...ts), time_max: Math.max(...ts) });
    await this.appendSpan(this.runId, key, String(c.commitSeq), c.commitSeq, meta, indices, ts, c.arrays);
  }

  /** An active span record (facts file's span payload) holding `indices`. */
  private async appendSpan(
    runId: string,
    key: string,
    batchId: string,
    commitSeq: number,
    meta: JsonObject,
    indices: number[],
    timestamps: number[],
    arrays: string[],
  ): Promise<void> {
    this.spans.set(key, indices);
    await this.cp.appendRecord(runId, {
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
    });
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
  async invalidated(commitSeq: number, indices: number[]): Promise<void> {
    if (this.runId === undefined) return;
    for (const key of await this.spansHolding(new Set(indices))) {
      await this.cp.appendRecord(this.runId, {
        key,
        type: "span",
        size: 0,
        timestamp: this.cp.clock(),
        status: "replaced",
        meta: { group: this.group, run_id: this.runId, commit_seq: commitSeq, invalidated: indices },
        schema_version: "v2",
      });
      this.spans.delete(key);
      this.replaced.add(key);
    }
  }

  /** Truncate-on-resume: the dropped records' spans are replaced by this run (idempotent). */
  async truncated(keep: number, dropped: number): Promise<void> {
    if (this.runId === undefined) return;
    const gone = new Set(Array.from({ length: dropped - keep }, (_, i) => keep + i));
    const keys = await this.spansHolding(gone);
    for (const k of keys) this.replaced.add(k);
    await this.cp.appendEvent(this.runId, "replacement_committed", {
      replacing_run_id: this.runId,
      replaced_span_keys: keys,
    });
  }

  /**
   * Resume after a crash: records committed by a run that never completed (abandoned, failed) feed no
   * projection. The resuming run adopts them with one span, so the projection shows every committed
   * record exactly once.
   */
  async adoptCommitted(committed: number[], commitSeq: number): Promise<void> {
    if (this.runId === undefined || committed.length === 0) return;
    const covered = new Set<number>();
    for (const { key, ranges } of await projectedSpans(this.cp, this.group)) {
      if (this.replaced.has(key)) continue;
      for (const [a, b] of ranges) for (let i = a; i <= b; i++) covered.add(i);
    }
    const orphaned = committed.filter((i) => !covered.has(i));
    if (orphaned.length === 0) return;
    const key = `span_${this.runId}_adopted_${this.group}`;
    await this.appendSpan(this.runId, key, "adopted", commitSeq, { adopted: true }, orphaned, [], []);
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
      if (this.runId !== undefined) await this.cp.completeRun(this.runId);
    });
  }

  /** An exception ends the owner's run run_failed; claims are released either way. */
  async fail(error: unknown): Promise<void> {
    await this.finish(async () => {
      if (this.runId !== undefined)
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
