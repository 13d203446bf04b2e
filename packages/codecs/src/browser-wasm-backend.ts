import { ZarrStreamError } from "@zarr-stream/spec";
import type { Backend } from "./backend.js";
import { corruptChunk } from "./frame-checks.js";
import { numcodecsBackend } from "./numcodecs-backend.js";
import { instantiateCodecs, WasmCodecError, type WasmCodecs } from "./wasm-module.js";

/**
 * Where the page finds wasm/zstream_codecs.wasm: the URL its import map gives the package's
 * "./zstream_codecs.wasm" export (a bundle does not keep the package's layout), else the file beside
 * this module in the package as published.
 */
function moduleUrl(): URL {
  try {
    return new URL(import.meta.resolve("@zarr-stream/codecs/zstream_codecs.wasm"));
  } catch {
    return new URL("../../wasm/zstream_codecs.wasm", import.meta.url);
  }
}

let instance: Promise<WasmCodecs> | undefined;

/** One instance on the page's thread, fetched and compiled on first use; a failed load is retried. */
function codecs(): Promise<WasmCodecs> {
  instance ??= (async () => {
    const url = moduleUrl();
    const response = await fetch(url);
    if (!response.ok)
      throw new ZarrStreamError(`the SIMD wasm codecs module is not at ${url} (HTTP ${response.status})`);
    const module = await WebAssembly.compile(await response.arrayBuffer());
    return instantiateCodecs(module);
  })().catch((e: unknown) => {
    instance = undefined;
    throw e;
  });
  return instance;
}

/** A module failure as CorruptShard (bad input, naming the key) or ZarrStreamError. */
function codecError(e: unknown, key: string): unknown {
  if (!(e instanceof WasmCodecError)) return e;
  if (e.kind === "corrupt") return corruptChunk(key, e.message);
  return new ZarrStreamError(`wasm codec failed: ${e.message}`);
}

async function call<T>(key: string, run: (c: WasmCodecs) => T): Promise<T> {
  const c = await codecs();
  try {
    return run(c);
  } catch (e) {
    throw codecError(e, key);
  }
}

/**
 * Our Blosc/zstd compiled to wasm32 + SIMD128, called on the page's thread: a viewer decodes a few
 * chunks at a time, and the calls are synchronous inside the module. Frames of a Blosc inner codec we
 * do not implement go to numcodecs.
 */
export function browserWasmBackend(): Backend {
  return {
    name: "wasm",
    bloscEncode: (data, clevel, shuffle, typesize) =>
      call("", (c) => c.bloscEncode(data, clevel, shuffle, typesize)),
    async bloscDecode(data, expectedLength, key) {
      const c = await codecs();
      try {
        return c.bloscDecode(data, expectedLength);
      } catch (e) {
        if (e instanceof WasmCodecError && e.kind === "unsupported")
          return numcodecsBackend.bloscDecode(data, expectedLength, key);
        throw codecError(e, key);
      }
    },
    zstdEncode: (data, level, checksum) => call("", (c) => c.zstdEncode(data, level, checksum)),
    zstdDecode: (data, expectedLength, key) => call(key, (c) => c.zstdDecode(data, expectedLength)),
    crc32c: (data) => call("", (c) => c.crc32c(data)),
  };
}
