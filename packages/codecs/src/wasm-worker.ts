/* A worker thread of the SIMD wasm backend: one module instance, one job at a time, results transferred. */
import { parentPort, workerData } from "node:worker_threads";
import { instantiateCodecs, WasmCodecError, type WasmCodecs } from "./wasm-module.js";

export interface WorkerJob {
  id: number;
  op: "bloscEncode" | "bloscDecode" | "zstdEncode" | "zstdDecode";
  args: unknown[];
}

const codecs = instantiateCodecs((workerData as { module: WebAssembly.Module }).module);

parentPort?.on("message", ({ id, op, args }: WorkerJob) => {
  try {
    const fn = codecs[op] as (...a: unknown[]) => Uint8Array;
    const result = fn(...args);
    parentPort?.postMessage({ id, result }, [result.buffer as ArrayBuffer]);
  } catch (e) {
    const kind = e instanceof WasmCodecError ? e.kind : "internal";
    parentPort?.postMessage({ id, error: { message: e instanceof Error ? e.message : String(e), kind } });
  }
});

export type { WasmCodecs };
