/*
 * A worker thread of the SIMD wasm backend: one module instance, one job at a time. Input and result
 * travel through a staging SharedArrayBuffer the pool owns, so a message carries no bytes and no buffer
 * is allocated per job on either side.
 */
import { parentPort, workerData } from "node:worker_threads";
import { instantiateCodecs, WasmCodecError, type WasmOp } from "./wasm-module.js";

export interface WorkerJob {
  id: number;
  op: WasmOp;
  /** Holds the input (its first inputLength bytes); the result is written over it from offset 0. */
  stage: SharedArrayBuffer;
  inputLength: number;
}

export type WorkerReply =
  | {
      id: number;
      length: number /** A larger stage, when the result did not fit the one sent. */;
      stage?: SharedArrayBuffer;
    }
  | { id: number; error: { message: string; kind: WasmCodecError["kind"] } };

const codecs = instantiateCodecs((workerData as { module: WebAssembly.Module }).module);

parentPort?.on("message", ({ id, op, stage, inputLength }: WorkerJob) => {
  try {
    let out = stage;
    // The module copies the input in before it writes anything, so the result may overwrite it.
    const length = codecs.run(op, new Uint8Array(stage, 0, inputLength), (result) => {
      if (result.length > out.byteLength) out = new SharedArrayBuffer(result.length);
      new Uint8Array(out, 0, result.length).set(result);
      return result.length;
    });
    parentPort?.postMessage(
      (out === stage ? { id, length } : { id, length, stage: out }) satisfies WorkerReply,
    );
  } catch (e) {
    const kind = e instanceof WasmCodecError ? e.kind : "internal";
    parentPort?.postMessage({
      id,
      error: { message: e instanceof Error ? e.message : String(e), kind },
    } satisfies WorkerReply);
  }
});
