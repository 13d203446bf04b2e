import { SchemaError, ZarrStreamError } from "@zarr-stream/spec";
import type { Backend } from "./backend.js";
import { type CodecSpec, checkCodecSpec, MAX_CHUNK_BYTES } from "./codec-spec.js";
import { checkBloscFrame, checkZstdFrame } from "./frame-checks.js";
import { loadAddon, nativeBackend } from "./native-backend.js";
import { wasmBackend } from "./wasm-backend.js";

export { type CodecSpec, MAX_CHUNK_BYTES, profileCodec } from "./codec-spec.js";

let active: Backend | undefined;

function native(): Backend {
  const r = loadAddon();
  if ("error" in r) {
    throw new ZarrStreamError(
      `the native codecs addon is not available (${r.error}); build it with ` +
        "`npm run install -w packages/codecs` (needs a C compiler, libblosc-dev and libzstd-dev) or use the wasm backend",
    );
  }
  return nativeBackend(r.addon);
}

function backend(): Backend {
  if (active) return active;
  const forced = process.env.ZSTREAM_CODECS ?? "";
  if (forced === "native") active = native();
  else if (forced === "wasm") active = wasmBackend;
  else if (forced !== "")
    throw new ZarrStreamError(`ZSTREAM_CODECS must be "native" or "wasm", got "${forced}"`);
  else {
    const r = loadAddon();
    if ("addon" in r) active = nativeBackend(r.addon);
    else {
      process.stderr.write(
        `@zarr-stream/codecs: native addon unavailable (${r.error}); using the wasm backend\n`,
      );
      active = wasmBackend;
    }
  }
  return active;
}

/** Which implementation encode/decode/crc32c use: ZSTREAM_CODECS if set, else native when the addon loads. */
export function codecBackend(): "native" | "wasm" {
  return backend().name;
}

/** Switches implementation (tests, benchmarks). Throws ZarrStreamError when "native" is asked for but not built. */
export function setCodecBackend(b: "native" | "wasm"): void {
  if (b === "native") active = native();
  else if (b === "wasm") active = wasmBackend;
  else throw new ZarrStreamError(`unknown codec backend ${JSON.stringify(b)} (expected "native" or "wasm")`);
}

function checkBytes(data: unknown, what: string, limit = MAX_CHUNK_BYTES): asserts data is Uint8Array {
  if (!(data instanceof Uint8Array)) throw new SchemaError(`${what} must be a Uint8Array`, "", "codec");
  if (data.length > limit) {
    throw new SchemaError(
      `${what} is ${data.length} bytes; a chunk is at most ${MAX_CHUNK_BYTES}`,
      "",
      "codec",
    );
  }
}

/** Compresses one inner chunk. Do not modify `data` until the promise settles (native reads it off-thread). */
export async function encode(spec: CodecSpec, data: Uint8Array): Promise<Uint8Array> {
  checkCodecSpec(spec);
  checkBytes(data, "data");
  const b = backend();
  return spec.kind === "blosc"
    ? b.bloscEncode(data, spec.clevel, spec.shuffle, spec.typesize)
    : b.zstdEncode(data, spec.level, spec.checksum);
}

/** Throws CorruptShard (with key) on bad header/flags/typesize/nbytes, truncation, decoded length != expectedLength. */
export async function decode(
  spec: CodecSpec,
  data: Uint8Array,
  expectedLength: number,
  key = "",
): Promise<Uint8Array> {
  checkCodecSpec(spec);
  checkBytes(data, "data");
  if (!Number.isSafeInteger(expectedLength) || expectedLength < 0 || expectedLength > MAX_CHUNK_BYTES) {
    throw new SchemaError(
      `expectedLength must be an integer 0..${MAX_CHUNK_BYTES}, got ${expectedLength}`,
      "/expectedLength",
      "codec",
    );
  }
  const b = backend();
  if (spec.kind === "blosc") {
    checkBloscFrame(data, expectedLength, key);
    return b.bloscDecode(data, expectedLength, key);
  }
  checkZstdFrame(data, expectedLength, key);
  return b.zstdDecode(data, expectedLength, key);
}

/** CRC-32C (Castagnoli) as an unsigned number; the caller writes it as u32 little-endian. */
export async function crc32c(data: Uint8Array): Promise<number> {
  checkBytes(data, "crc32c input", Number.POSITIVE_INFINITY);
  return backend().crc32c(data);
}
