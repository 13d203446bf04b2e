import { Worker } from "node:worker_threads";
import type { WasmOp } from "./wasm-module.js";
import type { WorkerJob, WorkerReply } from "./wasm-worker.js";

const WORKER_FILE = new URL("./wasm-worker.js", import.meta.url);

/** A failure reported by a worker, or the worker's death. */
export interface WorkerFailure {
  message: string;
  kind: "corrupt" | "unsupported" | "internal";
}

/*
 * Two staging buffers per worker: while the worker runs one job, the main thread reads the previous
 * result out of the other and stages the next input, so a worker never waits on the main thread.
 */
const STAGES_PER_WORKER = 2;
// A stage larger than this (one huge chunk) is dropped after its job instead of being kept.
const KEEP_STAGE_BYTES = 32 << 20;

interface Job {
  op: WasmOp;
  input: Uint8Array;
  /** Reads the result out of the stage; the view is valid only during the call. */
  take(result: Uint8Array): unknown;
  resolve(value: unknown): void;
  reject(reason: WorkerFailure | Error): void;
}

interface Slot {
  worker: Worker;
  free: SharedArrayBuffer[];
  stages: number;
  queue: Job[];
  running: Map<number, { job: Job; stage: SharedArrayBuffer }>;
}

/** Room a job's stage needs: its input, and its result (zstd's bound covers both frame formats). */
function stageBytes(op: WasmOp, inputLength: number): number {
  const result =
    op.op === "bloscDecode" || op.op === "zstdDecode" ? op.expected : inputLength + (inputLength >> 8) + 128;
  return Math.max(inputLength, result, 1);
}

/**
 * Worker threads with one module instance each, as many as the machine has cores, so that chunks in
 * flight use every core as the addon's libuv jobs do. Inputs and results pass through staging
 * SharedArrayBuffers (see wasm-worker.ts): the main thread copies an input in and reads a result out
 * straight to where it is needed, and messages carry only numbers. Workers start on first use and are
 * unreferenced while idle, so they never keep a process alive.
 */
export class WasmWorkerPool {
  private readonly slots: Slot[] = [];
  private nextId = 0;

  constructor(
    private readonly module: WebAssembly.Module,
    private readonly size: number,
  ) {}

  /** Runs op on input in a worker; resolves to what `take` returns for the result. */
  run<T>(op: WasmOp, input: Uint8Array, take: (result: Uint8Array) => T): Promise<T> {
    const slot = this.pick();
    return new Promise<T>((resolve, reject) => {
      const job: Job = { op, input, take, resolve: resolve as (v: unknown) => void, reject };
      if (this.busy(slot) === 0) slot.worker.ref();
      if (slot.free.length > 0 || slot.stages < STAGES_PER_WORKER) this.dispatch(slot, job);
      else {
        // The caller may reuse its buffer once the call returns; a queued job keeps its own copy.
        job.input = input.slice();
        slot.queue.push(job);
      }
    });
  }

  private busy(slot: Slot): number {
    return slot.running.size + slot.queue.length;
  }

  private pick(): Slot {
    const idle = this.slots.find((s) => this.busy(s) === 0);
    if (idle) return idle;
    if (this.slots.length < this.size) {
      // No inherited execArgv: flags meant for the main script (--input-type, --test …) break a worker.
      const worker = new Worker(WORKER_FILE, { workerData: { module: this.module }, execArgv: [] });
      const slot: Slot = { worker, free: [], stages: 0, queue: [], running: new Map() };
      worker.on("message", (m: WorkerReply) => this.settle(slot, m));
      worker.on("error", (e) => this.failAll(slot, e));
      worker.unref();
      this.slots.push(slot);
      return slot;
    }
    return this.slots.reduce((a, b) => (this.busy(b) < this.busy(a) ? b : a));
  }

  private dispatch(slot: Slot, job: Job): void {
    const need = stageBytes(job.op, job.input.length);
    let stage = slot.free.pop();
    if (!stage) slot.stages++;
    if (!stage || stage.byteLength < need) stage = new SharedArrayBuffer(need);
    new Uint8Array(stage, 0, job.input.length).set(job.input);
    const id = this.nextId++;
    slot.running.set(id, { job, stage });
    slot.worker.postMessage({ id, op: job.op, stage, inputLength: job.input.length } satisfies WorkerJob);
  }

  private settle(slot: Slot, m: WorkerReply): void {
    const run = slot.running.get(m.id);
    if (!run) return;
    slot.running.delete(m.id);
    const { job } = run;
    const stage = "stage" in m && m.stage ? m.stage : run.stage;
    if ("error" in m) job.reject(m.error);
    else {
      try {
        job.resolve(job.take(new Uint8Array(stage, 0, m.length)));
      } catch (e) {
        job.reject(e as Error);
      }
    }
    if (stage.byteLength <= KEEP_STAGE_BYTES) slot.free.push(stage);
    else slot.stages--;
    const next = slot.queue.shift();
    if (next) this.dispatch(slot, next);
    else if (this.busy(slot) === 0) slot.worker.unref();
  }

  private failAll(slot: Slot, e: Error): void {
    const failure: WorkerFailure = { message: `wasm worker died: ${e.message}`, kind: "internal" };
    for (const { job } of slot.running.values()) job.reject(failure);
    for (const job of slot.queue) job.reject(failure);
    slot.running.clear();
    slot.queue.length = 0;
    this.slots.splice(this.slots.indexOf(slot), 1);
  }
}
