import {
  type ArrayLayout,
  allocTyped,
  copyStrided,
  decodeShard,
  encodeShard,
  shardKey,
} from "@zarr-stream/shard";
import type { TypedArray } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import type { ArrayPlan } from "./array-plan.js";
import { runLimited } from "./limit.js";

/** One shard object this writer owns within one time shard, held whole in memory (seed §5.4). */
interface ShardBuffer {
  plan: ArrayPlan;
  /** Full shard index, time axis included. */
  idx: number[];
  data: TypedArray;
  dirty: boolean;
}

interface OpenTimeShard {
  buffers: ShardBuffer[];
  /** Positions within the time shard that hold a record (written, or committed and reloaded). */
  filled: Set<number>;
}

const product = (xs: number[]) => xs.reduce((p, n) => p * n, 1);

/**
 * The open time shards of one writer: record arrays are copied into whole-shard buffers, and shards are
 * encoded and PUT whole (padded with fill while the time shard is partial). Copying a record-shaped
 * array into a shard is one strided box copy per owned shard, with the record seen as a time slab of
 * extent 1 wherever the time axis sits.
 */
export class TimeShardBuffers {
  private readonly open = new Map<number, OpenTimeShard>();

  constructor(
    private readonly store: Store,
    private readonly plans: ArrayPlan[],
    /** Records per time shard. */
    readonly shardT: number,
    /** Length of the time axis that encoding assumes (in-memory shape, may exceed the committed one). */
    private readonly timeLengthFor: (tsi: number) => number,
  ) {}

  has(tsi: number): boolean {
    return this.open.has(tsi);
  }

  openShards(): number[] {
    return [...this.open.keys()].sort((a, b) => a - b);
  }

  filledCount(tsi: number): number {
    return this.open.get(tsi)?.filled.size ?? 0;
  }

  private layoutAt(plan: ArrayPlan, tsi: number): ArrayLayout {
    const shape = [...plan.layout.shape];
    shape[plan.timeAxis] = this.timeLengthFor(tsi);
    return { ...plan.layout, shape };
  }

  private allocate(tsi: number): OpenTimeShard {
    const buffers: ShardBuffer[] = [];
    for (const plan of this.plans) {
      for (const owned of plan.ownedShards) {
        const idx = [...owned];
        idx[plan.timeAxis] = tsi;
        buffers.push({
          plan,
          idx,
          data: allocTyped(plan.dtype, product(plan.layout.shardShape)),
          dirty: false,
        });
      }
    }
    const shard = { buffers, filled: new Set<number>() };
    this.open.set(tsi, shard);
    return shard;
  }

  /**
   * Opens time shard `tsi` from what the store holds: every owned shard object is decoded into its buffer
   * and the positions `keep` says are committed are kept; all other positions are reset to fill, so
   * uncommitted leftovers of a dropped handle never survive a rewrite.
   */
  async reload(tsi: number, keep: (position: number) => boolean): Promise<void> {
    const shard = this.allocate(tsi);
    await runLimited(
      shard.buffers.map((b) => async () => {
        const key = shardKey(b.plan.name, b.idx);
        const bytes = await this.store.get(key);
        if (bytes !== undefined) await decodeShard(this.layoutAt(b.plan, tsi), bytes, key, b.data);
      }),
    );
    for (let pos = 0; pos < this.shardT; pos++) {
      if (keep(pos)) shard.filled.add(pos);
      else for (const b of shard.buffers) this.zeroPosition(b, pos);
    }
  }

  private zeroPosition(b: ShardBuffer, pos: number): void {
    const shape = b.plan.layout.shardShape;
    const count = shape.map((n, d) => (d === b.plan.timeAxis ? 1 : n));
    const zeros = allocTyped(b.plan.dtype, product(count));
    const dstStart = shape.map((_, d) => (d === b.plan.timeAxis ? pos : 0));
    copyStrided(
      zeros,
      count,
      count.map(() => 0),
      b.data,
      shape,
      dstStart,
      count,
    );
  }

  /** Copies record `index`'s arrays (by array name) into the buffers of its time shard. */
  put(index: number, arrays: Map<string, TypedArray>): void {
    const tsi = Math.floor(index / this.shardT);
    const pos = index % this.shardT;
    const shard = this.open.get(tsi) ?? this.allocate(tsi);
    for (const b of shard.buffers) {
      const src = arrays.get(b.plan.name);
      if (src === undefined) continue;
      const { plan } = b;
      const srcShape = plan.suppliedFullShape;
      const srcStart: number[] = [];
      const dstStart: number[] = [];
      const count: number[] = [];
      plan.dims.forEach((_, d) => {
        if (d === plan.timeAxis) {
          srcStart.push(0);
          dstStart.push(pos);
          count.push(1);
          return;
        }
        const s = plan.layout.shardShape[d]!;
        const lo = b.idx[d]! * s;
        const hi = Math.min(lo + s, plan.layout.shape[d]!);
        srcStart.push(lo - plan.suppliedStart[d]!);
        dstStart.push(0);
        count.push(hi - lo);
      });
      copyStrided(src, srcShape, srcStart, b.data, plan.layout.shardShape, dstStart, count);
      b.dirty = true;
    }
    shard.filled.add(pos);
  }

  /**
   * Encodes and PUTs every dirty buffer (of one time shard, or of all), returning the keys written.
   * With `drop`, the written time shards' buffers are released (append mode, once a time shard is full).
   */
  async write(tsis: number[], drop: boolean): Promise<string[]> {
    const dirty: { b: ShardBuffer; tsi: number }[] = [];
    for (const tsi of tsis)
      for (const b of this.open.get(tsi)?.buffers ?? []) if (b.dirty) dirty.push({ b, tsi });
    const keys: string[] = [];
    await runLimited(
      dirty.map(({ b, tsi }) => async () => {
        const key = shardKey(b.plan.name, b.idx);
        const bytes = await encodeShard(this.layoutAt(b.plan, tsi), b.idx, b.data);
        await this.store.put(key, bytes);
        b.dirty = false;
        keys.push(key);
      }),
    );
    if (drop) for (const tsi of tsis) this.open.delete(tsi);
    return keys;
  }

  async writeAll(): Promise<string[]> {
    return this.write(this.openShards(), false);
  }

  clear(): void {
    this.open.clear();
  }
}
