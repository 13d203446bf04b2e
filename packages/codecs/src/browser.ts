import { ZarrStreamError } from "@zarr-stream/spec";
import type { Backend } from "./backend.js";
import { type CodecBackendName, provideBackends } from "./backend-choice.js";
import { browserWasmBackend } from "./browser-wasm-backend.js";
import { numcodecsBackend } from "./numcodecs-backend.js";

/*
 * The browser entry point (the "browser" export condition): our SIMD wasm, fetched and compiled on first
 * use, and numcodecs' wasm for Blosc inner codecs we do not implement. No node: import, no addon loader,
 * no process.env: a bundler takes this file by condition, not by file name.
 */

export { type CodecBackendName, codecBackend, setCodecBackend } from "./backend-choice.js";
export {
  copyBoxes,
  crc32c,
  decode,
  decodeBoxes,
  encode,
  encodeInto,
  maxEncodedLength,
} from "./codec-calls.js";
export { type CodecSpec, MAX_CHUNK_BYTES, profileCodec } from "./codec-spec.js";
export { boxStride } from "./copy-boxes.js";

let wasm: Backend | undefined;

function byName(name: CodecBackendName): Backend {
  if (name === "native") throw new ZarrStreamError("the native codecs addon does not exist in a browser");
  if (name === "numcodecs") return numcodecsBackend;
  wasm ??= browserWasmBackend();
  return wasm;
}

provideBackends({ byName, preferred: () => byName("wasm") });
