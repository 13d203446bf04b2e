import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { ZarrStreamError } from "@zarr-stream/spec";
import type { Backend } from "./backend.js";
import { copyBoxesHere } from "./copy-boxes.js";
import { corruptChunk } from "./frame-checks.js";
import { numcodecsBackend } from "./numcodecs-backend.js";
import { instantiateCodecs, type WasmCodecs } from "./wasm-module.js";
import type { WorkerJob } from "./wasm-worker.js";

/** dist/src/simd-wasm-backend.js → the package's wasm/ (built by scripts/build-wasm.mjs, shipped in the package). */
const WASM_FILE = fileURLToPath(new URL("../../wasm/zstream_codecs.wasm", import.meta.url));
const WORKER_FILE = new URL("./wasm-worker.js", import.meta.url);

type Failure = { message: string; kind: "corrupt" | "unsupported" | "internal" };
interface Slot {
  worker: Worker;
  pending: number;
}

/**
 * Our Blosc/zstd compiled to wasm32 + SIMD128, on a pool of worker threads (one module instance each, as
 * many as the machine has cores) so that chunks in flight use every core, as the addon's libuv jobs do.
 * Workers start on first use and are unreferenced while idle, so they never keep a process alive.
 */
class WorkerPool {
  private readonly slots: Slot[] = [];
  private readonly waiting = new Map<
    number,
    { resolve(v: Uint8Array): void; reject(e: Failure): void; slot: Slot }
  >();
  private nextId = 0;

  constructor(
    private readonly module: WebAssembly.Module,
    private readonly size: number,
  ) {}

  private pick(): Slot {
    const idle = this.slots.find((s) => s.pending === 0);
    if (idle) return idle;
    if (this.slots.length < this.size) {
      // No inherited execArgv: flags meant for the main script (--input-type, --test …) break a worker.
      const worker = new Worker(WORKER_FILE, { workerData: { module: this.module }, execArgv: [] });
      const slot: Slot = { worker, pending: 0 };
      worker.on("message", (m: { id: number; result?: Uint8Array; error?: Failure }) => this.settle(m));
      worker.on("error", (e) => this.failAll(slot, e));
      worker.unref();
      this.slots.push(slot);
      return slot;
    }
    return this.slots.reduce((a, b) => (b.pending < a.pending ? b : a));
  }

  run(op: WorkerJob["op"], input: Uint8Array, ...rest: unknown[]): Promise<Uint8Array> {
    // A private copy goes to the worker: the caller's buffer may be a view into a much larger one
    // (structured clone would copy all of it) and must stay usable.
    const copy = input.slice();
    const slot = this.pick();
    const id = this.nextId++;
    if (slot.pending++ === 0) slot.worker.ref();
    return new Promise<Uint8Array>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject, slot });
      slot.worker.postMessage({ id, op, args: [copy, ...rest] } satisfies WorkerJob, [
        copy.buffer as ArrayBuffer,
      ]);
    });
  }

  private settle(m: { id: number; result?: Uint8Array; error?: Failure }): void {
    const w = this.waiting.get(m.id);
    if (!w) return;
    this.waiting.delete(m.id);
    if (--w.slot.pending === 0) w.slot.worker.unref();
    if (m.error) w.reject(m.error);
    else w.resolve(m.result!);
  }

  private failAll(slot: Slot, e: Error): void {
    for (const [id, w] of this.waiting) {
      if (w.slot !== slot) continue;
      this.waiting.delete(id);
      w.reject({ message: `wasm worker died: ${e.message}`, kind: "internal" });
    }
    this.slots.splice(this.slots.indexOf(slot), 1);
  }
}

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
  const f = e as Partial<Failure>;
  if (f.kind === "corrupt") throw corruptChunk(key, f.message ?? "corrupt frame");
  throw new ZarrStreamError(`wasm codec failed: ${f.message ?? String(e)}`);
}

// Below this size a trip to a worker costs more than the work itself.
const LOCAL_LIMIT = 1 << 14;

export function simdWasmBackend(module: WebAssembly.Module, local: WasmCodecs): Backend {
  const pool = new WorkerPool(module, Math.max(1, availableParallelism()));
  const bloscDecode = async (data: Uint8Array, expectedLength: number, key: string) => {
    try {
      if (data.length < LOCAL_LIMIT && expectedLength < LOCAL_LIMIT)
        return local.bloscDecode(data, expectedLength);
      return await pool.run("bloscDecode", data, expectedLength);
    } catch (e) {
      if ((e as Partial<Failure>).kind === "unsupported")
        return numcodecsBackend.bloscDecode(data, expectedLength, key);
      return failure(e, key);
    }
  };
  const zstdDecode = async (data: Uint8Array, expectedLength: number, key: string) => {
    try {
      if (data.length < LOCAL_LIMIT && expectedLength < LOCAL_LIMIT)
        return local.zstdDecode(data, expectedLength);
      return await pool.run("zstdDecode", data, expectedLength);
    } catch (e) {
      return failure(e, key);
    }
  };
  const backend: Backend = {
    name: "wasm",
    async bloscEncode(data, clevel, shuffle, typesize) {
      try {
        if (data.length < LOCAL_LIMIT) return local.bloscEncode(data, clevel, shuffle, typesize);
        return await pool.run("bloscEncode", data, clevel, shuffle, typesize);
      } catch (e) {
        return failure(e, "");
      }
    },
    bloscDecode,
    async zstdEncode(data, level, checksum) {
      try {
        if (data.length < LOCAL_LIMIT) return local.zstdEncode(data, level, checksum);
        return await pool.run("zstdEncode", data, level, checksum);
      } catch (e) {
        return failure(e, "");
      }
    },
    zstdDecode,
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
    /* Frames decode on every worker at once; failures name their frame, as the addon's do. */
    async decodeBoxes(spec, key, frames, chunkShape, itemSize, target, targetShape, boxes) {
      const chunkBytes = chunkShape.reduce((p, n) => p * n, itemSize);
      const rank = chunkShape.length;
      const decoded = await Promise.all(
        frames.map((f, i) =>
          (spec.kind === "blosc" ? bloscDecode(f, chunkBytes, key) : zstdDecode(f, chunkBytes, key)).catch(
            (e: unknown) => {
              throw Object.assign(e as Error, { frame: i });
            },
          ),
        ),
      );
      decoded.forEach((chunk, i) => {
        const box = Int32Array.of(0, ...boxes.subarray(3 * rank * i, 3 * rank * (i + 1)));
        copyBoxesHere(chunk, chunkShape, [target], targetShape, itemSize, box);
      });
    },
  };
  return backend;
}
