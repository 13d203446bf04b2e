import { ZarrStreamError } from "@zarr-stream/spec";
import type { Backend } from "./backend.js";

/** The implementations, fastest first: the addon, our SIMD wasm, numcodecs' wasm. */
export type CodecBackendName = "native" | "wasm" | "numcodecs";

/** What a platform's entry point (index.ts for Node, browser.ts) offers. */
export interface BackendProviders {
  /** The backend of that name; throws ZarrStreamError saying why when it is not available here. */
  byName(name: CodecBackendName): Backend;
  /** The backend to use until setCodecBackend picks one. */
  preferred(): Backend;
}

let providers: BackendProviders | undefined;
let active: Backend | undefined;

/** Called once by each entry point, before any codec call. */
export function provideBackends(p: BackendProviders): void {
  providers = p;
  active = undefined;
}

function platform(): BackendProviders {
  if (providers) return providers;
  throw new ZarrStreamError("no codec backends: import @zarr-stream/codecs by its package name");
}

/** The backend every call uses: the one setCodecBackend chose, else the platform's preferred one. */
export function activeBackend(): Backend {
  active ??= platform().preferred();
  return active;
}

/** Which implementation encode/decode/crc32c use. */
export function codecBackend(): CodecBackendName {
  return activeBackend().name;
}

/**
 * Switches implementation; the one place a backend is chosen (tests, benchmarks, an application's
 * setting). Throws ZarrStreamError when the one asked for is not built or does not exist on this platform.
 */
export function setCodecBackend(name: CodecBackendName): void {
  if (name !== "native" && name !== "wasm" && name !== "numcodecs") {
    throw new ZarrStreamError(
      `codec backend must be "native", "wasm" or "numcodecs", got ${JSON.stringify(name)}`,
    );
  }
  active = platform().byName(name);
}
