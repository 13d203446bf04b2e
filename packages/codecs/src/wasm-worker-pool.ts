import { Worker } from "node:worker_threads";
import type { WasmOp } from "./wasm-module.js";
import type { WorkerForget, WorkerJob, WorkerReply } from "./wasm-worker.js";

const WORKER_FILE = new URL("./wasm-worker.js", import.meta.url);

/** A failure reported by a worker, or the worker's death. */
export interface WorkerFailure {
  message: string;
  kind: "corrupt" | "unsupported" | "internal";
}

/*
 * Every job gets a stage of its own, so all of a shard's chunks are posted at once and a worker never
 * waits on the main thread between jobs. Stages are kept for reuse up to this many bytes per worker
 * (a shard's worth of chunks); beyond it they are dropped after their job.
 */
const KEEP_STAGE_BYTES = 64 << 20;

interface Job {
  op: WasmOp;
  input: Uint8Array;
  /** Reads a result left in the stage (valid only during the call); absent: the result is transferred. */
  take?: (result: Uint8Array) => unknown;
  resolve(value: unknown): void;
  reject(reason: WorkerFailure | Error): void;
}

/** A staging buffer; the worker learns it with its first job and keeps it by id. */
interface Stage {
  id: number;
  buffer: SharedArrayBuffer;
  known: boolean;
}

interface Slot {
  worker: Worker;
  free: Stage[];
  /** Bytes of the stages in `free`. */
  keptBytes: number;
  running: Map<number, { job: Job; stage: Stage }>;
}

/** Room a job's stage needs: its input, and its result if that comes back in place. */
function stageBytes(op: WasmOp, inputLength: number, inPlace: boolean): number {
  if (!inPlace) return Math.max(inputLength, 1);
  // zstd's compress bound covers both frame formats.
  const result =
    op.op === "bloscDecode" || op.op === "zstdDecode" ? op.expected : inputLength + (inputLength >> 8) + 128;
  return Math.max(inputLength, result, 1);
}

/**
 * Worker threads with one module instance each, as many as the machine has cores, so that chunks in
 * flight use every core as the addon's libuv jobs do. Inputs pass through staging SharedArrayBuffers
 * (see wasm-worker.ts), so the main thread copies an input once and allocates nothing for it; a result
 * comes back transferred, or in place in the stage for a caller that only copies it elsewhere. Workers start on first use and are
 * unreferenced while idle, so they never keep a process alive.
 */
export class WasmWorkerPool {
  private readonly slots: Slot[] = [];
  private nextId = 0;
  private nextStage = 0;

  constructor(
    private readonly module: WebAssembly.Module,
    private readonly size: number,
  ) {}

  /** Runs op on input in a worker; resolves to the result, in a buffer of its own. */
  run(op: WasmOp, input: Uint8Array): Promise<Uint8Array> {
    return this.submit<Uint8Array>(op, input, undefined);
  }

  /**
   * Runs op on input in a worker and resolves to what `take` returns for the result, which it reads in
   * place (the view is valid only during the call): nothing is allocated for it.
   */
  runInPlace<T>(op: WasmOp, input: Uint8Array, take: (result: Uint8Array) => T): Promise<T> {
    return this.submit<T>(op, input, take);
  }

  private submit<T>(
    op: WasmOp,
    input: Uint8Array,
    take: ((result: Uint8Array) => T) | undefined,
  ): Promise<T> {
    const slot = this.pick();
    return new Promise<T>((resolve, reject) => {
      const job: Job = { op, input, take, resolve: resolve as (v: unknown) => void, reject };
      if (slot.running.size === 0) slot.worker.ref();
      this.dispatch(slot, job);
    });
  }

  private busy(slot: Slot): number {
    return slot.running.size;
  }

  private pick(): Slot {
    const idle = this.slots.find((s) => this.busy(s) === 0);
    if (idle) return idle;
    if (this.slots.length < this.size) {
      // No inherited execArgv: flags meant for the main script (--input-type, --test …) break a worker.
      const worker = new Worker(WORKER_FILE, { workerData: { module: this.module }, execArgv: [] });
      const slot: Slot = { worker, free: [], keptBytes: 0, running: new Map() };
      worker.on("message", (m: WorkerReply) => this.settle(slot, m));
      worker.on("error", (e) => this.failAll(slot, e));
      worker.unref();
      this.slots.push(slot);
      return slot;
    }
    return this.slots.reduce((a, b) => (this.busy(b) < this.busy(a) ? b : a));
  }

  private dispatch(slot: Slot, job: Job): void {
    const need = stageBytes(job.op, job.input.length, job.take !== undefined);
    let stage = slot.free.pop();
    if (stage) slot.keptBytes -= stage.buffer.byteLength;
    if (stage && stage.buffer.byteLength < need)
      stage = { id: stage.id, buffer: new SharedArrayBuffer(need), known: false };
    if (!stage) stage = { id: this.nextStage++, buffer: new SharedArrayBuffer(need), known: false };
    new Uint8Array(stage.buffer, 0, job.input.length).set(job.input);
    const id = this.nextId++;
    slot.running.set(id, { job, stage });
    slot.worker.postMessage({
      id,
      op: job.op,
      stageId: stage.id,
      ...(stage.known ? {} : { stage: stage.buffer }),
      inputLength: job.input.length,
      resultTo: job.take ? "stage" : "transfer",
    } satisfies WorkerJob);
    stage.known = true;
  }

  private settle(slot: Slot, m: WorkerReply): void {
    const run = slot.running.get(m.id);
    if (!run) return;
    slot.running.delete(m.id);
    const { job, stage } = run;
    if ("error" in m) job.reject(m.error);
    else if ("result" in m) job.resolve(m.result);
    else {
      if (m.stage) stage.buffer = m.stage;
      try {
        job.resolve(job.take!(new Uint8Array(stage.buffer, 0, m.length)));
      } catch (e) {
        job.reject(e as Error);
      }
    }
    this.keep(slot, stage);
    if (slot.running.size === 0) slot.worker.unref();
  }

  /** Keeps a stage for reuse while the worker's free stages stay under KEEP_STAGE_BYTES; else drops it. */
  private keep(slot: Slot, stage: Stage): void {
    if (slot.keptBytes + stage.buffer.byteLength <= KEEP_STAGE_BYTES) {
      slot.free.push(stage);
      slot.keptBytes += stage.buffer.byteLength;
    } else {
      slot.worker.postMessage({ forget: stage.id } satisfies WorkerForget);
    }
  }

  private failAll(slot: Slot, e: Error): void {
    const failure: WorkerFailure = { message: `wasm worker died: ${e.message}`, kind: "internal" };
    for (const { job } of slot.running.values()) job.reject(failure);
    slot.running.clear();
    this.slots.splice(this.slots.indexOf(slot), 1);
  }
}
