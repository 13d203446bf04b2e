import { readArrayLayout, readArrayRegion } from "@zarr-stream/reader";
import { ProtocolError, type RecordArrays, SchemaError } from "@zarr-stream/spec";
import { truncatedState } from "./committed-state.js";
import { checkRecordArrays } from "./input-checks.js";
import type { CommittedState } from "./manifest-doc.js";
import type { TimeMode, TimeModeContext, Truncation } from "./time-mode.js";
import { TimeShardBuffers } from "./time-shard-buffers.js";

/**
 * Append mode (seed §6.1): the record index is the running count and t increases strictly. The owner
 * streams the time coordinate with the variables. A full time shard is encoded and written in the
 * background while the caller produces the next one.
 */
export class AppendMode implements TimeMode {
  readonly append = true;
  readonly #ctx: TimeModeContext;
  readonly #shardT: number;
  readonly #buffers: TimeShardBuffers;
  #nextIndex = 0;
  #lastT: number | null = null;
  /** The background write of the last full time shard; its keys join the next token. */
  #inflight: Promise<string[]> | undefined;
  /** A background time-shard write that failed, not yet reported to the caller. */
  #backgroundFailure: { err: unknown } | undefined;

  constructor(ctx: TimeModeContext) {
    this.#ctx = ctx;
    this.#shardT = ctx.schema.shard_shape[ctx.schema.time_dim]!;
    const plans = ctx.plans.filter((p) => p.kind === "var" || p.kind === "time");
    this.#buffers = new TimeShardBuffers(ctx.objects, plans, this.#shardT, (tsi) => (tsi + 1) * this.#shardT);
    this.adopt(ctx.view.state);
  }

  async writeRecord(t: number, arrays: RecordArrays): Promise<number> {
    if (typeof t !== "number" || !Number.isFinite(t))
      throw new SchemaError(`t must be a finite number, got ${t}`, "/t");
    // writer-decisions.md rule 22: -0 does not round-trip through JSON in every language.
    if (Object.is(t, -0))
      throw new SchemaError("t is -0, which JSON does not carry alike in every language: use 0", "/t");
    if (this.#lastT !== null && !(t > this.#lastT)) {
      throw new SchemaError(`t must be strictly increasing: ${t} after ${this.#lastT}`, "/t");
    }
    const { plans, writerId, isOwner, schema, pending } = this.#ctx;
    const prepared = checkRecordArrays(plans, arrays, writerId);
    this.#throwBackgroundFailure();
    const index = this.#nextIndex;
    if (isOwner) prepared.set(schema.time_dim, Float64Array.of(t));
    // State first: a second writeRecord issued before this one settles still gets the next index.
    this.#nextIndex += 1;
    this.#lastT = t;
    pending.records.set(index, t);
    await this.#buffers.put(index, prepared);
    if (index % this.#shardT === this.#shardT - 1) {
      // At most one full time shard is in flight, so memory stays at two time shards of buffers.
      await this.#settleWrites();
      this.#inflight = this.#buffers.write([Math.floor(index / this.#shardT)], true);
      // Marked handled so a failure never crashes the process unobserved; #settleWrites records it.
      this.#inflight.catch(() => {});
    }
    return index;
  }

  async writeRecordAt(): Promise<void> {
    throw new ProtocolError("writeRecordAt is for indexed mode; an append store takes writeRecord");
  }

  isOnAxis(): boolean {
    return true;
  }

  assertRecordWritten(record: number): void {
    if (record >= this.#nextIndex) {
      throw new ProtocolError(
        `blob for record ${record}: that record is not written yet (next record index ${this.#nextIndex})`,
      );
    }
  }

  async giveBack(): Promise<void> {
    await this.#inflight?.catch(() => undefined);
    await this.#buffers.giveBack();
  }

  async writeDirty(): Promise<void> {
    await this.#settleWrites();
    this.#ctx.pending.addObjects(await this.#buffers.writeAll());
    // Every dirty shard is written now, a failed background write's included.
    this.#backgroundFailure = undefined;
  }

  handedOff(): void {}

  adopt(state: CommittedState): void {
    this.#nextIndex = state.nCommitted;
    this.#lastT = state.lastT;
  }

  /** Seed §5.4: committed records that end inside a time shard are reloaded, so rewrites keep them. */
  async reloadOpen(): Promise<void> {
    const n = this.#nextIndex;
    if (n % this.#shardT === 0) return;
    await this.#buffers.reload(Math.floor(n / this.#shardT), (pos) => pos < n % this.#shardT);
  }

  checkResumeAt(): void {}

  /** How many committed records have t <= at (reads the time coordinate only). */
  async truncationPoint(at: number | undefined): Promise<Truncation> {
    const { view, plans, store } = this.#ctx;
    const n = view.state.nCommitted;
    if (at === undefined || n === 0) return { keep: n };
    const timePlan = plans.find((p) => p.kind === "time")!;
    const layout = await readArrayLayout(store, timePlan.name);
    const times = (await readArrayRegion(
      store,
      timePlan.name,
      { ...layout, shape: [Math.max(n, layout.shape[0]!)] },
      [[0, n]],
    )) as Float64Array;
    let keep = 0;
    while (keep < n && times[keep]! <= at) keep++;
    return { keep, times };
  }

  async resume(
    point: Truncation,
    persist: ((point: Truncation) => Promise<void>) | undefined,
  ): Promise<void> {
    const { keep, times } = point;
    const view = this.#ctx.view;
    if (persist) await persist(point);
    else if (keep < view.state.nCommitted)
      view.state = truncatedState(view.state, keep, times!, this.#shardT, false);
    this.#nextIndex = keep;
    this.#lastT = keep > 0 ? (times ? times[keep - 1]! : view.state.lastT) : null;
    await this.reloadOpen();
  }

  /**
   * Waits for the background time-shard write. A failed one leaves its time shard open and dirty, so the
   * next flush writes it again; the next writeRecord reports the failure before it accepts anything.
   */
  async #settleWrites(): Promise<void> {
    const inflight = this.#inflight;
    if (inflight === undefined) return;
    this.#inflight = undefined;
    try {
      this.#ctx.pending.addObjects(await inflight);
    } catch (err) {
      this.#backgroundFailure ??= { err };
    }
  }

  #throwBackgroundFailure(): void {
    const failure = this.#backgroundFailure;
    if (failure === undefined) return;
    this.#backgroundFailure = undefined;
    throw failure.err;
  }
}
