import { ZarrStreamError } from "@zarr-stream/spec";
import type { Backend } from "./backend.js";
import { type CodecBackendName, codecBackend, provideBackends } from "./backend-choice.js";
import { loadAddon, nativeBackend } from "./native-backend.js";
import { numcodecsBackend } from "./numcodecs-backend.js";
import { loadSimdWasm, simdWasmBackend } from "./simd-wasm-backend.js";

/*
 * The Node entry point: the addon, our SIMD wasm on worker threads, numcodecs' wasm. A bundler that
 * targets browsers takes browser.ts instead (the "browser" export condition).
 */

export * from "./api.js";

function native(): Backend {
  const r = loadAddon();
  if ("error" in r) {
    throw new ZarrStreamError(
      `the native codecs addon is not available (${r.error}); build it with ` +
        "`npm run install -w packages/codecs` (needs a C compiler) or use the wasm backend",
    );
  }
  return nativeBackend(r.addon);
}

let simd: Backend | undefined;

function simdWasm(): Backend {
  if (simd) return simd;
  const r = loadSimdWasm();
  if ("error" in r) {
    throw new ZarrStreamError(
      `the SIMD wasm codecs module is not available (${r.error}); build it with ` +
        "`node packages/codecs/scripts/build-wasm.mjs` (needs clang, lld and wasi-libc)",
    );
  }
  simd = simdWasmBackend(r.module, r.local);
  return simd;
}

function byName(name: CodecBackendName): Backend {
  if (name === "native") return native();
  return name === "wasm" ? simdWasm() : numcodecsBackend;
}

/** ZSTREAM_CODECS, read here only: the process's own override of the preferred backend. */
function environmentChoice(): CodecBackendName | undefined {
  const forced = process.env.ZSTREAM_CODECS ?? "";
  if (forced === "") return undefined;
  if (forced === "native" || forced === "wasm" || forced === "numcodecs") return forced;
  throw new ZarrStreamError(
    `ZSTREAM_CODECS must be "native", "wasm" or "numcodecs", got ${JSON.stringify(forced)}`,
  );
}

/** Why the backend in use is not the fastest one, and the one command that fixes it; undefined on native. */
export function codecFallbackNotice(): string | undefined {
  return fallbackNotice(codecBackend());
}

function fallbackNotice(b: CodecBackendName): string | undefined {
  if (b === "native") return undefined;
  const addon = loadAddon();
  const why = "error" in addon ? addon.error : "ZSTREAM_CODECS chose another backend";
  const fix =
    "approve the codecs install script: `npm install-scripts approve @zarr-stream/codecs && npm rebuild " +
    "@zarr-stream/codecs` (it needs a C compiler)";
  if (b === "wasm")
    return `native addon unavailable (${why}); using the SIMD wasm backend. For native speed, ${fix}`;
  const wasm = loadSimdWasm();
  const wasmWhy = "error" in wasm ? wasm.error : "ZSTREAM_CODECS chose numcodecs";
  return `native addon unavailable (${why}) and SIMD wasm unavailable (${wasmWhy}); using numcodecs' wasm. For native speed, ${fix}`;
}

/**
 * ZSTREAM_CODECS if set, else native when the addon loads, else our SIMD wasm, else numcodecs' wasm;
 * a fallback the environment did not ask for is announced once on stderr.
 */
function preferred(): Backend {
  const forced = environmentChoice();
  if (forced) return byName(forced);
  const chosen =
    "addon" in loadAddon() ? native() : "module" in loadSimdWasm() ? simdWasm() : numcodecsBackend;
  if (chosen.name !== "native") process.stderr.write(`@zarr-stream/codecs: ${fallbackNotice(chosen.name)}\n`);
  return chosen;
}

provideBackends({ byName, preferred });
