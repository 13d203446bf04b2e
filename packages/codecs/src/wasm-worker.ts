/*
 * A worker thread of the SIMD wasm backend: one module instance, one job at a time. Inputs arrive in a
 * staging SharedArrayBuffer the pool owns (registered once, then named by number). A result the caller
 * keeps is allocated here and transferred; one the caller only copies from (decodeBoxes' scatter) is
 * written back into the stage, so no buffer is allocated for it at all.
 */
import { parentPort, workerData } from "node:worker_threads";
import { instantiateCodecs, WasmCodecError, type WasmOp } from "./wasm-module.js";

export interface WorkerJob {
  id: number;
  op: WasmOp;
  /** The stage holding the input (its first inputLength bytes); sent along only the first time. */
  stageId: number;
  stage?: SharedArrayBuffer;
  inputLength: number;
  /** "stage": the result is written over the input; "transfer": it comes back in a buffer of its own. */
  resultTo: "stage" | "transfer";
}

/** The pool dropped a stage: the worker lets go of it too. */
export interface WorkerForget {
  forget: number;
}

export type WorkerReply =
  | {
      id: number;
      length: number /** A larger stage, when the result did not fit. */;
      stage?: SharedArrayBuffer;
    }
  | { id: number; result: Uint8Array }
  | { id: number; error: { message: string; kind: WasmCodecError["kind"] } };

const codecs = instantiateCodecs((workerData as { module: WebAssembly.Module }).module);
const stages = new Map<number, SharedArrayBuffer>();

parentPort?.on("message", (job: WorkerJob | WorkerForget) => {
  if ("forget" in job) {
    stages.delete(job.forget);
    return;
  }
  const { id, op, stageId, inputLength, resultTo } = job;
  try {
    if (job.stage) stages.set(stageId, job.stage);
    const stage = stages.get(stageId)!;
    const input = new Uint8Array(stage, 0, inputLength);
    if (resultTo === "transfer") {
      // A result the caller keeps: allocated here, in parallel with the other workers, and moved.
      const result = codecs.run(op, input, (r) => r.slice());
      parentPort?.postMessage({ id, result } satisfies WorkerReply, [result.buffer as ArrayBuffer]);
      return;
    }
    let out = stage;
    // The module copies the input in before it writes anything, so the result may overwrite it.
    const length = codecs.run(op, input, (result) => {
      if (result.length > out.byteLength) out = new SharedArrayBuffer(result.length);
      new Uint8Array(out, 0, result.length).set(result);
      return result.length;
    });
    if (out === stage) parentPort?.postMessage({ id, length } satisfies WorkerReply);
    else {
      stages.set(stageId, out);
      parentPort?.postMessage({ id, length, stage: out } satisfies WorkerReply);
    }
  } catch (e) {
    const kind = e instanceof WasmCodecError ? e.kind : "internal";
    parentPort?.postMessage({
      id,
      error: { message: e instanceof Error ? e.message : String(e), kind },
    } satisfies WorkerReply);
  }
});
