import { copyBoxes } from "@zarr-stream/codecs";
import {
  type ArrayLayout,
  allocTyped,
  bytesOf,
  copyStrided,
  decodeShard,
  encodeShardChunks,
  encodeShardChunksKnown,
  itemSize,
  type KnownFrames,
  shardKey,
} from "@zarr-stream/shard";
import type { TypedArray } from "@zarr-stream/spec";
import type { ArrayPlan } from "./array-plan.js";
import { runLimited } from "./limit.js";

/**
 * Where one inner chunk of a shard takes its part of a record: the chunk's first time position within
 * the shard, and the box (non-time extents; time extent 1) it copies from the record array.
 */
interface ChunkSlot {
  chunk: number;
  timeOrigin: number;
  srcStart: number[];
  dstStart: number[];
  count: number[];
}

/** How the buffers reach the store: the writer handle's fenced reads and writes. */
export interface ShardObjects {
  read(key: string): Promise<Uint8Array | undefined>;
  /** A data object's write: its checksum joins the next token's flush receipt. */
  putData(key: string, bytes: Uint8Array): Promise<void>;
  /** The handle writes these keys no more (their time shard is full and written). */
  forget(keys: Iterable<string>): void;
  /** Refuses (Fenced) once another handle of this writer has taken its lease. */
  assertLease(): Promise<void>;
}

/**
 * One shard object this writer owns within one time shard, held whole in memory (seed §5.4) in
 * chunk-major order: inner chunk i (C order over the shard's chunk grid) is `chunks[i]`, contiguous in its
 * own C order. Records are copied straight into the chunks, so encoding compresses views, never copies.
 */
interface ShardBuffer {
  plan: ArrayPlan;
  /** Full shard index, time axis included. */
  idx: number[];
  data: TypedArray;
  chunks: TypedArray[];
  /** The chunks' bytes (views made once, not per record). */
  chunkBytes: Uint8Array[];
  slots: ChunkSlot[];
  dirty: boolean;
  /** Reused from an earlier time shard: positions not put since still hold its values (see zeroStale). */
  stale: boolean;
  /**
   * The chunks' frames from this time shard's earlier writes, once it has been written while partial:
   * a later write encodes only the chunks changed since (see encodeShardChunksKnown). Every change to a
   * chunk clears its entry.
   */
  known: KnownFrames | undefined;
  /** Counts changes to the chunks: a write that saw a change land meanwhile leaves the buffer dirty. */
  changes: number;
}

interface OpenTimeShard {
  buffers: ShardBuffer[];
  /** Positions within the time shard that hold a record (written, or committed and reloaded). */
  filled: Set<number>;
}

const product = (xs: number[]) => xs.reduce((p, n) => p * n, 1);

/** One array's copies of a record into its shards' chunks (see copyBoxes). */
interface CopyJob {
  dsts: Uint8Array[];
  boxes: number[];
}

/**
 * A ShardBuffer, fresh or reused, always built here with its properties in one order: objects of one
 * shape keep put's optimized code valid, where a reused buffer spread from a fresh one had a shape of its
 * own and deoptimized put at every time shard.
 */
function shardBuffer(
  plan: ArrayPlan,
  idx: number[],
  data: TypedArray,
  chunks: TypedArray[],
  chunkBytes: Uint8Array[],
  slots: ChunkSlot[],
  stale: boolean,
): ShardBuffer {
  return { plan, idx, data, chunks, chunkBytes, slots, dirty: false, stale, known: undefined, changes: 0 };
}

/** The chunk slots of one owned shard: every inner chunk with an in-shape part, and its box in a record. */
function chunkSlots(plan: ArrayPlan, idx: number[]): ChunkSlot[] {
  const { shardShape, chunkShape, shape } = plan.layout;
  const grid = shardShape.map((s, d) => s / chunkShape[d]!);
  const slots: ChunkSlot[] = [];
  const n = product(grid);
  for (let chunk = 0; chunk < n; chunk++) {
    // C-order chunk grid position of `chunk`.
    const pos: number[] = new Array(grid.length);
    let rest = chunk;
    for (let d = grid.length - 1; d >= 0; d--) {
      pos[d] = rest % grid[d]!;
      rest = Math.floor(rest / grid[d]!);
    }
    const srcStart: number[] = [];
    const count: number[] = [];
    let empty = false;
    plan.dims.forEach((_, d) => {
      if (d === plan.timeAxis) {
        srcStart.push(0);
        count.push(1);
        return;
      }
      const lo = idx[d]! * shardShape[d]! + pos[d]! * chunkShape[d]!;
      const hi = Math.min(lo + chunkShape[d]!, shape[d]!);
      if (hi <= lo) empty = true;
      srcStart.push(lo - plan.suppliedStart[d]!);
      count.push(Math.max(hi - lo, 0));
    });
    if (empty) continue;
    const timeOrigin = plan.timeAxis < 0 ? 0 : pos[plan.timeAxis]! * chunkShape[plan.timeAxis]!;
    slots.push({ chunk, timeOrigin, srcStart, dstStart: plan.dims.map(() => 0), count });
  }
  return slots;
}

/**
 * The open time shards of one writer: record arrays are copied into whole-shard buffers, and shards are
 * encoded and PUT whole (padded with fill while the time shard is partial). Copying a record-shaped
 * array into a shard is one strided box copy per inner chunk, with the record seen as a time slab of
 * extent 1 wherever the time axis sits. Buffers of written time shards are kept for the next one, so a
 * long append allocates (and page-faults) its buffers once.
 */
export class TimeShardBuffers {
  private readonly open = new Map<number, OpenTimeShard>();
  /** Released buffers by shard key (time index 0), reused (not cleared) by the next time shard: one time shard's worth. */
  private readonly spare = new Map<string, ShardBuffer>();
  /** Encoded-shard buffers, one per shard encode in flight, reused so encoding allocates nothing. */
  private readonly outputs: Uint8Array[] = [];
  /** Record copies not yet settled: a write waits for them, so it never encodes a half-copied record. */
  private readonly copying = new Set<Promise<unknown>>();

  constructor(
    private readonly objects: ShardObjects,
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
        const spareKey = shardKey(plan.name, owned);
        const reused = this.spare.get(spareKey);
        if (reused !== undefined) {
          // Not cleared here: a streaming append overwrites every position, so clearing a time shard's
          // worth of memory per time shard would be wasted; zeroStale clears only what stays unwritten.
          this.spare.delete(spareKey);
          buffers.push(
            shardBuffer(reused.plan, idx, reused.data, reused.chunks, reused.chunkBytes, reused.slots, true),
          );
          continue;
        }
        const data = allocTyped(plan.dtype, product(plan.layout.shardShape));
        const size = product(plan.layout.chunkShape);
        const chunks = Array.from({ length: data.length / size }, (_, i) =>
          data.subarray(i * size, (i + 1) * size),
        );
        const bytes = chunks.map((c) => bytesOf(c));
        buffers.push(shardBuffer(plan, idx, data, chunks, bytes, chunkSlots(plan, owned), false));
      }
    }
    const shard = { buffers, filled: new Set<number>() };
    this.open.set(tsi, shard);
    return shard;
  }

  private release(shard: OpenTimeShard): void {
    for (const b of shard.buffers) {
      const owned = [...b.idx];
      owned[b.plan.timeAxis] = 0;
      this.spare.set(shardKey(b.plan.name, owned), b);
    }
  }

  /**
   * Opens time shard `tsi` from what the store holds: every owned shard object is decoded into its buffer
   * and the positions `keep` says are committed are kept; all other positions are reset to fill, so
   * uncommitted leftovers of a dropped handle never survive a rewrite. A reload that fails leaves the
   * time shard unopened: held open, its buffers would lack the committed records it did not read, and the
   * retried write would put fill over them.
   */
  async reload(tsi: number, keep: (position: number) => boolean): Promise<void> {
    const shard = this.allocate(tsi);
    for (const b of shard.buffers) this.clearStale(b);
    try {
      await this.readInto(shard, tsi);
    } catch (err) {
      this.open.delete(tsi);
      this.release(shard);
      throw err;
    }
    for (let pos = 0; pos < this.shardT; pos++) {
      if (keep(pos)) shard.filled.add(pos);
      else for (const b of shard.buffers) this.zeroPosition(b, pos);
    }
  }

  /** Decodes every owned shard object of time shard `tsi` that the store holds into its buffer. */
  private async readInto(shard: OpenTimeShard, tsi: number): Promise<void> {
    await runLimited(
      shard.buffers.map((b) => async () => {
        const key = shardKey(b.plan.name, b.idx);
        const bytes = await this.objects.read(key);
        if (bytes === undefined) return;
        const layout = this.layoutAt(b.plan, tsi);
        const whole = await decodeShard(layout, bytes, key);
        const { chunkShape, shardShape } = layout;
        const zeros = chunkShape.map(() => 0);
        const grid = shardShape.map((s, d) => s / chunkShape[d]!);
        b.chunks.forEach((chunk, i) => {
          const origin: number[] = new Array(grid.length);
          let rest = i;
          for (let d = grid.length - 1; d >= 0; d--) {
            origin[d] = (rest % grid[d]!) * chunkShape[d]!;
            rest = Math.floor(rest / grid[d]!);
          }
          copyStrided(whole, shardShape, origin, chunk, chunkShape, zeros, chunkShape);
        });
        this.allChanged(b);
      }),
    );
  }

  /** Slots whose chunk holds time position `pos` of the shard, with dstStart aimed at it. */
  private slotsAt(b: ShardBuffer, pos: number): ChunkSlot[] {
    const { timeAxis } = b.plan;
    if (timeAxis < 0) return b.slots;
    const chunkT = b.plan.layout.chunkShape[timeAxis]!;
    const out: ChunkSlot[] = [];
    for (const slot of b.slots) {
      if (pos < slot.timeOrigin || pos >= slot.timeOrigin + chunkT) continue;
      slot.dstStart[timeAxis] = pos - slot.timeOrigin;
      out.push(slot);
    }
    return out;
  }

  /**
   * Adds to `job` the copy boxes of time position `pos` into `b`'s chunks: per slot, its destination's
   * position in job.dsts, then srcStart, dstStart and count. Plain loops over numbers: on a shard of
   * hundreds of small chunks this runs per record, and spreading the slots' arrays into push made a
   * function that V8 took hundreds of milliseconds to optimize, again after each deopt.
   */
  private addBoxes(b: ShardBuffer, pos: number, job: CopyJob): void {
    const { timeAxis } = b.plan;
    const chunkT = timeAxis < 0 ? 1 : b.plan.layout.chunkShape[timeAxis]!;
    const { boxes, dsts } = job;
    const frames = b.known?.frames;
    b.changes++;
    for (const slot of b.slots) {
      if (timeAxis >= 0) {
        if (pos < slot.timeOrigin || pos >= slot.timeOrigin + chunkT) continue;
        slot.dstStart[timeAxis] = pos - slot.timeOrigin;
      }
      if (frames !== undefined) frames[slot.chunk] = undefined;
      boxes.push(dsts.length);
      for (let d = 0; d < slot.srcStart.length; d++) boxes.push(slot.srcStart[d]!);
      for (let d = 0; d < slot.dstStart.length; d++) boxes.push(slot.dstStart[d]!);
      for (let d = 0; d < slot.count.length; d++) boxes.push(slot.count[d]!);
      dsts.push(b.chunkBytes[slot.chunk]!);
    }
  }

  private clearStale(b: ShardBuffer): void {
    if (!b.stale) return;
    bytesOf(b.data).fill(0);
    b.stale = false;
    this.allChanged(b);
  }

  /** Every chunk of `b` changed: no kept frame holds, and a write in flight leaves it dirty. */
  private allChanged(b: ShardBuffer): void {
    b.known = undefined;
    b.changes++;
  }

  /** Resets the positions of a reused buffer that this time shard never wrote, before it is encoded. */
  private zeroStale(b: ShardBuffer, filled: Set<number>): void {
    if (!b.stale) return;
    for (let pos = 0; pos < this.shardT; pos++) if (!filled.has(pos)) this.zeroPosition(b, pos);
    b.stale = false;
  }

  private zeroPosition(b: ShardBuffer, pos: number): void {
    const { chunkShape } = b.plan.layout;
    const count = chunkShape.map((n, d) => (d === b.plan.timeAxis ? 1 : n));
    const zeros = allocTyped(b.plan.dtype, product(count));
    const from = count.map(() => 0);
    const frames = b.known?.frames;
    b.changes++;
    for (const slot of this.slotsAt(b, pos)) {
      copyStrided(zeros, count, from, b.chunks[slot.chunk]!, chunkShape, slot.dstStart, count);
      if (frames !== undefined) frames[slot.chunk] = undefined;
    }
  }

  /**
   * Copies record `index`'s arrays (by array name) into the buffers of its time shard: one copyBoxes job
   * per array, so the arrays of a record copy in parallel on the codec pool. The arrays must stay
   * unchanged until the promise settles.
   */
  async put(index: number, arrays: Map<string, TypedArray>): Promise<void> {
    const tsi = Math.floor(index / this.shardT);
    const pos = index % this.shardT;
    const shard = this.open.get(tsi) ?? this.allocate(tsi);
    const byArray = new Map<ArrayPlan, CopyJob>();
    for (const b of shard.buffers) {
      if (!arrays.has(b.plan.name)) continue;
      let job = byArray.get(b.plan);
      if (job === undefined) {
        job = { dsts: [], boxes: [] };
        byArray.set(b.plan, job);
      }
      this.addBoxes(b, pos, job);
      b.dirty = true;
    }
    shard.filled.add(pos);
    const copies = Promise.all(
      [...byArray].map(([plan, job]) =>
        copyBoxes(
          bytesOf(arrays.get(plan.name)!),
          Int32Array.from(plan.suppliedFullShape),
          job.dsts,
          Int32Array.from(plan.layout.chunkShape),
          itemSize(plan.dtype),
          Int32Array.from(job.boxes),
        ),
      ),
    );
    this.copying.add(copies);
    try {
      await copies;
    } finally {
      this.copying.delete(copies);
    }
  }

  /**
   * Encodes and PUTs every dirty buffer (of one time shard, or of all), returning the keys written.
   * With `drop`, the written time shards' buffers are released (append mode, once a time shard is full).
   */
  async write(tsis: number[], drop: boolean): Promise<string[]> {
    // A record put but not yet copied (a writeRecord not awaited before a flush) is copied first.
    if (this.copying.size > 0) await Promise.allSettled(this.copying);
    const dirty: { b: ShardBuffer; tsi: number; filled: Set<number> }[] = [];
    for (const tsi of tsis) {
      const shard = this.open.get(tsi);
      for (const b of shard?.buffers ?? []) {
        if (!b.dirty) continue;
        this.zeroStale(b, shard!.filled);
        dirty.push({ b, tsi, filled: shard!.filled });
      }
    }
    const keys: string[] = [];
    // One lease check per batch: a handle another process of this writer has taken over writes nothing.
    if (dirty.length > 0) await this.objects.assertLease();
    await runLimited(
      dirty.map(({ b, tsi, filled }) => async () => {
        const key = shardKey(b.plan.name, b.idx);
        let out: Uint8Array | undefined;
        const take = (n: number) => {
          out ??= this.outputFor(n);
          // A time shard written as it fills asks for a little more each time: room for it filled, at
          // the rate so far (pages never written cost nothing), and at least double.
          if (out === undefined || out.length < n) {
            const full = Math.ceil((n * this.shardT) / Math.max(1, filled.size));
            out = new Uint8Array(Math.max(full, 2 * (out?.length ?? 0)));
          }
          return out;
        };
        const changes = b.changes;
        try {
          const layout = this.layoutAt(b.plan, tsi);
          // A time shard written while partial is written again as it fills: its frames are kept, so the
          // next write encodes only the records put since.
          if (filled.size < this.shardT) this.keepFrames(b, layout, filled);
          const bytes =
            b.known === undefined
              ? await encodeShardChunks(layout, b.idx, b.chunks, { take })
              : await encodeShardChunksKnown(layout, b.idx, b.chunks, b.known, { take });
          await this.objects.putData(key, bytes);
        } finally {
          // Stores keep no reference to what they were given once put settles (Store.put).
          if (out !== undefined) this.outputs.push(out);
        }
        // A record put into this buffer while it was encoded may be half in what was written: the buffer
        // stays dirty, and its kept frames, which may hold that half, are dropped.
        if (b.changes === changes) b.dirty = false;
        else b.known = undefined;
        keys.push(key);
      }),
    );
    if (drop) for (const tsi of tsis) this.drop(tsi);
    return keys;
  }

  private drop(tsi: number): void {
    const shard = this.open.get(tsi);
    if (shard === undefined) return;
    this.open.delete(tsi);
    this.release(shard);
    this.objects.forget(shard.buffers.map((b) => shardKey(b.plan.name, b.idx)));
  }

  /**
   * The kept output buffer that fits `n` bytes most tightly, else the largest (to be grown), else none.
   * Shards of different sizes share the kept buffers: taking whichever comes first often means one too
   * small, replaced by a fresh one whose pages the write then faults in (158 MB of output buffers for 67 MB
   * of records in a time shard of 32 committed per record, in 23 allocations; 5 with the best fit).
   */
  private outputFor(n: number): Uint8Array | undefined {
    let best = -1;
    for (let i = 0; i < this.outputs.length; i++) {
      const o = this.outputs[i]!.length;
      const b = this.outputs[best]?.length;
      // One that fits beats one too small; of two that fit, the smaller; of two too small, the larger.
      if (b === undefined || (o >= n ? b < n || o < b : b < n && o > b)) best = i;
    }
    return best < 0 ? undefined : this.outputs.splice(best, 1)[0];
  }

  /**
   * Starts or goes on keeping `b`'s frames for a write while its time shard is partial, each chunk that
   * holds no filled position known to be left out: those positions hold fill (a fresh buffer, zeroStale,
   * a reload's reset), so encoding would only scan them to find zeros. Not reading them also leaves their
   * pages untouched until a record lands there: a page read first maps the kernel's zero page, and the
   * record's copy then pays a copy-on-write fault and a TLB shootdown across cores per page (most of the
   * record copies' time in a time shard committed record by record, measured).
   */
  private keepFrames(b: ShardBuffer, layout: ArrayLayout, filled: Set<number>): void {
    const { shape } = layout;
    let known = b.known;
    if (known?.shape === undefined || known.shape.some((n, d) => n !== shape[d])) {
      known = { shape: [...shape], frames: new Array(b.chunks.length).fill(undefined) };
      b.known = known;
    }
    const { timeAxis } = b.plan;
    if (timeAxis < 0) return;
    const chunkT = b.plan.layout.chunkShape[timeAxis]!;
    for (const slot of b.slots) {
      if (known.frames[slot.chunk] !== undefined) continue;
      let holdsRecord = false;
      for (let t = slot.timeOrigin; t < slot.timeOrigin + chunkT; t++) holdsRecord ||= filled.has(t);
      if (!holdsRecord) known.frames[slot.chunk] = null;
    }
  }

  /**
   * Releases every open time shard with nothing unwritten, so memory stays bounded however many time
   * shards a run touches; a later write into one reloads it from the store.
   */
  releaseWritten(): void {
    for (const [tsi, shard] of [...this.open]) if (!shard.buffers.some((b) => b.dirty)) this.drop(tsi);
  }

  /**
   * The handle is closed: gives back every buffer it holds (time shards open or spare, kept frames, output
   * buffers) once no copy into them is in flight, and returns their bytes. V8 frees an ArrayBuffer's
   * memory only when a collection finds it dead, and a writer's buffers are hundreds of megabytes of its
   * external memory: left to the collector, they force a full mark-compact into whatever the process does
   * next (12 ms of marking and 4 of munmap inside the first read-all pass after writing the matrix's base
   * cell, measured). Detached, the memory belongs to a clone nothing holds, which the next minor
   * collection frees off the JS thread. (`ArrayBuffer.prototype.transfer(0)`, Node 21 on, frees it at
   * once but on the JS thread: 4 ms for 50 MB, measured.)
   */
  async giveBack(): Promise<number> {
    await Promise.allSettled(this.copying);
    const buffers = new Set<ArrayBufferLike>();
    for (const shard of this.open.values()) {
      for (const b of shard.buffers) {
        buffers.add(b.data.buffer);
        for (const f of b.known?.frames ?? []) if (f) buffers.add(f.buffer);
      }
    }
    for (const b of this.spare.values()) buffers.add(b.data.buffer);
    for (const o of this.outputs) buffers.add(o.buffer);
    this.open.clear();
    this.spare.clear();
    this.outputs.length = 0;
    let bytes = 0;
    for (const buffer of buffers) {
      const n = buffer.byteLength;
      try {
        structuredClone(buffer, { transfer: [buffer as ArrayBuffer] });
        bytes += n;
      } catch {
        // Not transferable (a shared or pooled buffer): the collector frees it as before.
      }
    }
    return bytes;
  }

  async writeAll(): Promise<string[]> {
    return this.write(this.openShards(), false);
  }
}
