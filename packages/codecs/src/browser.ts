import { ZarrStreamError } from "@zarr-stream/spec";
import type { Backend } from "./backend.js";
import { type CodecBackendName, provideBackends } from "./backend-choice.js";
import { browserWasmBackend } from "./browser-wasm-backend.js";
import { numcodecsBackend } from "./numcodecs-backend.js";

/*
 * The browser entry point (the "browser" export condition): our SIMD wasm, fetched and compiled on first
 * use, and numcodecs' wasm for Blosc inner codecs we do not implement. No node: import, no addon loader,
 * nothing read from the environment: a bundler takes this file by condition, not by file name.
 */

export * from "./api.js";

let wasm: Backend | undefined;

function byName(name: CodecBackendName): Backend {
  if (name === "native") throw new ZarrStreamError("the native codecs addon does not exist in a browser");
  if (name === "numcodecs") return numcodecsBackend;
  wasm ??= browserWasmBackend();
  return wasm;
}

provideBackends({ byName, preferred: () => byName("wasm") });
