import { ProtocolError, type RecordArrays, SchemaError } from "@zarr-stream/spec";
import { checkRecordArrays } from "./input-checks.js";
import type { TimeMode, TimeModeContext, Truncation } from "./time-mode.js";
import { TimeShardBuffers } from "./time-shard-buffers.js";

/**
 * Indexed mode (seed §6.2): a fixed time axis, written by the owner at create; records arrive in any
 * order at their index, and a committed one is invalidated before it is written again. A time shard is
 * written as soon as every record of it is present; buffers of written time shards are released once
 * their records are handed off, and a later write into one reloads it.
 */
export class IndexedMode implements TimeMode {
  readonly append = false;
  readonly #ctx: TimeModeContext;
  readonly #times: number[];
  readonly #shardT: number;
  readonly #buffers: TimeShardBuffers;
  /**
   * Records this handle has written. A reload keeps them as well as the committed ones: a contributor's
   * tokened record is committed only when the owner's commit lands, and a re-read manifest (the rewrite
   * rule's) does not show it before; reset to fill, the commit of its token would publish fill.
   */
  readonly #written = new Set<number>();

  constructor(ctx: TimeModeContext, times: number[]) {
    this.#ctx = ctx;
    this.#times = times;
    this.#shardT = ctx.schema.shard_shape[ctx.schema.time_dim]!;
    const plans = ctx.plans.filter((p) => p.kind === "var");
    this.#buffers = new TimeShardBuffers(ctx.objects, plans, this.#shardT, () => times.length);
  }

  async writeRecord(): Promise<number> {
    throw new ProtocolError("writeRecord is for append mode; an indexed store takes writeRecordAt");
  }

  async writeRecordAt(index: number, t: number, arrays: RecordArrays): Promise<void> {
    const times = this.#times;
    if (!Number.isInteger(index) || index < 0 || index >= times.length) {
      throw new SchemaError(`record index ${index} is not an integer in [0, ${times.length})`, "/index");
    }
    if (!Object.is(t, times[index]))
      throw new SchemaError(`t ${t} is not times[${index}] = ${times[index]} (bitwise)`, "/t");
    const { plans, writerId, view, pending } = this.#ctx;
    const prepared = checkRecordArrays(plans, arrays, writerId);
    await view.assertRecordWritable(index);
    const shardT = this.#shardT;
    const tsi = Math.floor(index / shardT);
    if (!this.#buffers.has(tsi)) {
      const kept = (i: number) => view.isRecordCommitted(i) || this.#written.has(i);
      await this.#buffers.reload(tsi, (pos) => kept(tsi * shardT + pos));
    }
    await this.#buffers.put(index, prepared);
    this.#written.add(index);
    pending.records.set(index, t);
    const valid = Math.min(shardT, times.length - tsi * shardT);
    if (this.#buffers.filledCount(tsi) === valid) pending.addObjects(await this.#buffers.write([tsi], false));
  }

  isOnAxis(record: number): boolean {
    return record < this.#times.length;
  }

  assertRecordWritten(): void {}

  async writeDirty(): Promise<void> {
    this.#ctx.pending.addObjects(await this.#buffers.writeAll());
  }

  async giveBack(): Promise<void> {
    await this.#buffers.giveBack();
  }

  handedOff(): void {
    this.#buffers.releaseWritten();
  }

  adopt(): void {}

  async reloadOpen(): Promise<void> {}

  checkResumeAt(at: number | undefined): void {
    if (at !== undefined)
      throw new ProtocolError("resume of an indexed store truncates nothing: at must be undefined");
  }

  async truncationPoint(): Promise<Truncation> {
    return { keep: this.#ctx.view.state.nCommitted };
  }

  async resume(): Promise<void> {}
}
