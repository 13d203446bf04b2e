import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { ZarrStreamError } from "@zarr-stream/spec";
import type { Backend } from "./backend.js";
import type { CodecSpec } from "./codec-spec.js";
import { copyBoxesHere } from "./copy-boxes.js";
import { corruptChunk } from "./frame-checks.js";
import { LoneCallGate } from "./lone-call.js";
import { numcodecsBackend } from "./numcodecs-backend.js";
import { instantiateCodecs, type WasmCodecs, type WasmOp } from "./wasm-module.js";
import { WasmWorkerPool, type WorkerFailure } from "./wasm-worker-pool.js";

/** dist/src/simd-wasm-backend.js → the package's wasm/ (built by scripts/build-wasm.mjs, shipped in the package). */
const WASM_FILE = fileURLToPath(new URL("../../wasm/zstream_codecs.wasm", import.meta.url));

let loaded: { module: WebAssembly.Module; local: WasmCodecs } | { error: string } | undefined;

/** Compiles the shipped module once (and checks it instantiates); the error says why it cannot be used. */
export function loadSimdWasm(): { module: WebAssembly.Module; local: WasmCodecs } | { error: string } {
  if (!loaded) {
    try {
      const module = new WebAssembly.Module(readFileSync(WASM_FILE));
      loaded = { module, local: instantiateCodecs(module) };
    } catch (e) {
      loaded = { error: e instanceof Error ? e.message.split("\n")[0]! : String(e) };
    }
  }
  return loaded;
}

function failure(e: unknown, key: string): never {
  const f = e as Partial<WorkerFailure>;
  if (f.kind === "corrupt") throw corruptChunk(key, f.message ?? "corrupt frame");
  throw new ZarrStreamError(`wasm codec failed: ${f.message ?? String(e)}`);
}

// Below this size a trip to a worker costs more than the work itself.
const LOCAL_LIMIT = 1 << 14;

const copyOut = (result: Uint8Array) => result.slice();

/**
 * Our Blosc/zstd compiled to wasm32 + SIMD128: small inputs on this thread, the rest on a pool of worker
 * threads (see WasmWorkerPool). Frames of a Blosc inner codec we do not implement go to numcodecs.
 */
export function simdWasmBackend(module: WebAssembly.Module, local: WasmCodecs): Backend {
  const pool = new WasmWorkerPool(module, Math.max(1, availableParallelism()));
  const gate = new LoneCallGate();
  /**
   * Runs op here (a small input, or a decode that is a lone call: see lone-call.ts) or in a worker; with
   * `take`, the result is read in place instead of copied out.
   */
  const run = <T = Uint8Array>(
    op: WasmOp,
    data: Uint8Array,
    take?: (result: Uint8Array) => T,
  ): T | Promise<T> => {
    const decoding = op.op === "bloscDecode" || op.op === "zstdDecode";
    const out = decoding ? op.expected : data.length;
    const here = () => local.run(op, data, take ?? (copyOut as (r: Uint8Array) => T));
    if (data.length < LOCAL_LIMIT && out < LOCAL_LIMIT) return here();
    const pooled = () => (take ? pool.runInPlace(op, data, take) : (pool.run(op, data) as Promise<T>));
    return decoding ? gate.run(out, here, pooled) : pooled();
  };
  /** Decodes one frame (and hands it to `take`, if given); unsupported Blosc codecs go to numcodecs. */
  const decodeWith = async <T = Uint8Array>(
    spec: CodecSpec,
    data: Uint8Array,
    expected: number,
    key: string,
    take?: (result: Uint8Array) => T,
  ): Promise<T> => {
    try {
      return await run({ op: spec.kind === "blosc" ? "bloscDecode" : "zstdDecode", expected }, data, take);
    } catch (e) {
      if (spec.kind === "blosc" && (e as Partial<WorkerFailure>).kind === "unsupported") {
        const chunk = await numcodecsBackend.bloscDecode(data, expected, key);
        return take ? take(chunk) : (chunk as T);
      }
      return failure(e, key);
    }
  };
  const BLOSC = { kind: "blosc" } as CodecSpec;
  const ZSTD = { kind: "zstd" } as CodecSpec;
  const encodeWith = async (op: WasmOp, data: Uint8Array) => {
    try {
      return await run(op, data);
    } catch (e) {
      return failure(e, "");
    }
  };
  const backend: Backend = {
    name: "wasm",
    bloscEncode: (data, clevel, shuffle, typesize) =>
      encodeWith({ op: "bloscEncode", clevel, shuffle, typesize }, data),
    bloscDecode: (data, expectedLength, key) => decodeWith(BLOSC, data, expectedLength, key),
    zstdEncode: (data, level, checksum) => encodeWith({ op: "zstdEncode", level, checksum }, data),
    zstdDecode: (data, expectedLength, key) => decodeWith(ZSTD, data, expectedLength, key),
    crc32c: async (data) => local.crc32c(data),
    /* A shard's chunks go to every worker at once, then land back to back in `out`. */
    async encodePacked(spec, chunks, out, offset, sizes) {
      const frames = await Promise.all(
        chunks.map((c) =>
          c === undefined
            ? undefined
            : spec.kind === "blosc"
              ? backend.bloscEncode(c, spec.clevel, spec.shuffle, spec.typesize)
              : backend.zstdEncode(c, spec.level, spec.checksum),
        ),
      );
      let pos = offset;
      frames.forEach((f, i) => {
        sizes[i] = f?.length ?? 0;
        if (!f) return;
        out.set(f, pos);
        pos += f.length;
      });
      return pos;
    },
    /*
     * Frames decode on every worker at once, each scattered from its worker's stage straight into the
     * target; failures name their frame, as the addon's do.
     */
    async decodeBoxes(spec, key, frames, chunkShape, itemSize, target, targetShape, boxes) {
      const chunkBytes = chunkShape.reduce((p, n) => p * n, itemSize);
      const rank = chunkShape.length;
      await Promise.all(
        frames.map((f, i) => {
          const box = Int32Array.of(0, ...boxes.subarray(3 * rank * i, 3 * rank * (i + 1)));
          const scatter = (chunk: Uint8Array) =>
            copyBoxesHere(chunk, chunkShape, [target], targetShape, itemSize, box);
          return decodeWith(spec, f, chunkBytes, key, scatter).catch((e: unknown) => {
            throw Object.assign(e as Error, { frame: i });
          });
        }),
      );
    },
  };
  return backend;
}
