import { CorruptShard, SchemaError, ZarrStreamError } from "@zarr-stream/spec";
import type { Backend } from "./backend.js";
import { type CodecSpec, checkCodecSpec, MAX_CHUNK_BYTES } from "./codec-spec.js";
import { type CopyBoxesArgs, checkBoxes, checkDecodeBoxes, copyBoxesHere } from "./copy-boxes.js";
import { bloscNeedsOtherCodec, checkBloscFrame, checkZstdFrame } from "./frame-checks.js";
import { loadAddon, nativeBackend } from "./native-backend.js";
import { numcodecsBackend } from "./numcodecs-backend.js";
import { loadSimdWasm, simdWasmBackend } from "./simd-wasm-backend.js";

export { type CodecSpec, MAX_CHUNK_BYTES, profileCodec } from "./codec-spec.js";
export { boxStride } from "./copy-boxes.js";
export {
  type DirectFileWriter,
  directFileWriter,
  type FileRangeReader,
  fileRangeReader,
} from "./local-files.js";

/** The implementations, fastest first: the addon, our SIMD wasm, numcodecs' wasm. */
export type CodecBackendName = "native" | "wasm" | "numcodecs";

let active: Backend | undefined;
let simd: Backend | undefined;

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

function byName(name: string): Backend {
  if (name === "native") return native();
  if (name === "wasm") return simdWasm();
  if (name === "numcodecs") return numcodecsBackend;
  throw new ZarrStreamError(
    `codec backend must be "native", "wasm" or "numcodecs", got ${JSON.stringify(name)}`,
  );
}

/** Why the backend in use is not the fastest one, and the one command that fixes it; undefined on native. */
export function codecFallbackNotice(): string | undefined {
  const b = backend().name;
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

let noticed = false;

function backend(): Backend {
  if (active) return active;
  const forced = process.env.ZSTREAM_CODECS ?? "";
  if (forced !== "") active = byName(forced);
  else if ("addon" in loadAddon()) active = byName("native");
  else if ("module" in loadSimdWasm()) active = simdWasm();
  else active = numcodecsBackend;
  if (active.name !== "native" && forced === "" && !noticed) {
    noticed = true;
    process.stderr.write(`@zarr-stream/codecs: ${codecFallbackNotice()}\n`);
  }
  return active;
}

/**
 * Which implementation encode/decode/crc32c use: ZSTREAM_CODECS if set, else native when the addon loads,
 * else our SIMD wasm, else numcodecs' wasm.
 */
export function codecBackend(): CodecBackendName {
  return backend().name;
}

/** Switches implementation (tests, benchmarks). Throws ZarrStreamError when the one asked for is not built. */
export function setCodecBackend(b: CodecBackendName): void {
  active = byName(b);
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

/**
 * The most bytes one encoded chunk of `length` bytes can take: Blosc's 16-byte header over a stored copy,
 * or zstd's own bound (ZSTD_COMPRESSBOUND).
 */
export function maxEncodedLength(spec: CodecSpec, length: number): number {
  checkCodecSpec(spec);
  if (!Number.isSafeInteger(length) || length < 0 || length > MAX_CHUNK_BYTES)
    throw new SchemaError(
      `length must be an integer 0..${MAX_CHUNK_BYTES}, got ${length}`,
      "/length",
      "codec",
    );
  if (spec.kind === "blosc") return length + BLOSC_MAX_OVERHEAD;
  const small = 128 << 10;
  return length + Math.floor(length / 256) + (length < small ? Math.floor((small - length) / 2048) : 0);
}
const BLOSC_MAX_OVERHEAD = 16;

/**
 * Compresses `chunks` back to back into `out`, the first frame at `offset` (undefined chunks are skipped
 * and get size 0). `sizes[i]` receives chunk i's frame length; resolves with the offset after the last
 * frame. `out` must hold `offset` plus maxEncodedLength of every chunk. The frames are exactly what
 * `encode` returns for each chunk; this only saves the per-chunk calls and copies (a shard's worth of
 * chunks is one native job). Leave chunks and `out` untouched until the promise settles.
 */
export async function encodeInto(
  spec: CodecSpec,
  chunks: readonly (Uint8Array | undefined)[],
  out: Uint8Array,
  offset: number,
  sizes: Uint32Array,
): Promise<number> {
  checkCodecSpec(spec);
  if (!Array.isArray(chunks)) throw new SchemaError("chunks must be an array", "/chunks", "codec");
  checkBytes(out, "out", Number.POSITIVE_INFINITY);
  if (!(sizes instanceof Uint32Array) || sizes.length !== chunks.length)
    throw new SchemaError(`sizes must be a Uint32Array of ${chunks.length} elements`, "/sizes", "codec");
  let need = offset;
  chunks.forEach((c, i) => {
    if (c === undefined) return;
    checkBytes(c, `chunks[${i}]`);
    need += maxEncodedLength(spec, c.length);
  });
  if (!Number.isSafeInteger(offset) || offset < 0 || need > out.length || need > 2 ** 31 - 1) {
    throw new SchemaError(
      `out has ${out.length} bytes; offset ${offset} plus the chunks' bound needs ${need} (at most 2^31 - 1)`,
      "/out",
      "codec",
    );
  }
  const b = backend();
  if (b.encodePacked) return b.encodePacked(spec, chunks, out, offset, sizes);
  let pos = offset;
  for (let i = 0; i < chunks.length; i++) {
    const c = chunks[i];
    const frame = c === undefined ? undefined : await encode(spec, c);
    sizes[i] = frame?.length ?? 0;
    if (frame === undefined) continue;
    out.set(frame, pos);
    pos += frame.length;
  }
  return pos;
}

/**
 * Copies boxes of the row-major `src` (shape `srcShape`, `itemSize` bytes per element) into the `dsts`
 * (each of shape `dstShape`); `boxes` lists them (see boxStride). Bytes are copied as they are. On the
 * native backend this is one job on the libuv pool, so copies of several arrays run in parallel and off
 * the JS thread; it exists for the writer's record-to-chunk gather (issue #10). Everything is checked
 * before any byte moves (SchemaError); leave the buffers alone until the promise settles.
 */
export async function copyBoxes(...args: CopyBoxesArgs): Promise<void> {
  checkBoxes(...args);
  const b = backend();
  if (b.copyBoxes) return b.copyBoxes(...args);
  copyBoxesHere(...args);
}

/**
 * Decodes each frame (one inner chunk of shape `chunkShape`) and copies its box into `target` (shape
 * `targetShape`): `boxes` holds, per frame, its src start in the chunk, dst start in the target and count
 * (3·rank numbers). The read side's counterpart of encodeInto: on the native backend a shard's frames are
 * one pool job with no per-chunk buffer. Every frame gets decode()'s checks; a frame that fails is a
 * CorruptShard naming the key and the frame's position in `frames`, and boxes of earlier frames may already
 * be written. `chunkIds` (default: positions) is what the error calls each frame.
 */
export async function decodeBoxes(
  spec: CodecSpec,
  frames: readonly Uint8Array[],
  chunkShape: Int32Array,
  itemSize: number,
  target: Uint8Array,
  targetShape: Int32Array,
  boxes: Int32Array,
  key = "",
  chunkIds?: readonly number[],
): Promise<void> {
  checkCodecSpec(spec);
  checkDecodeBoxes(frames, chunkShape, itemSize, target, targetShape, boxes);
  const chunkBytes = chunkShape.reduce((p, n) => p * n, itemSize);
  frames.forEach((f, i) => {
    try {
      if (spec.kind === "blosc") checkBloscFrame(f, chunkBytes, key);
      else checkZstdFrame(f, chunkBytes, key);
    } catch (e) {
      throw inFrame(e, i, chunkIds);
    }
  });
  const b = backend();
  const otherCodec = spec.kind === "blosc" && frames.some(bloscNeedsOtherCodec);
  if (b.decodeBoxes && !otherCodec) {
    await b
      .decodeBoxes(spec, key, frames, chunkShape, itemSize, target, targetShape, boxes)
      .catch((e: unknown) => {
        throw inFrame(e, (e as { frame?: number }).frame, chunkIds);
      });
    return;
  }
  const rank = chunkShape.length;
  for (let i = 0; i < frames.length; i++) {
    const chunk = await decode(spec, frames[i]!, chunkBytes, key).catch((e: unknown) => {
      throw inFrame(e, i, chunkIds);
    });
    const box = Int32Array.of(0, ...boxes.subarray(3 * rank * i, 3 * rank * (i + 1)));
    copyBoxesHere(chunk, chunkShape, [target], targetShape, itemSize, box);
  }
}

/** A CorruptShard from frame i names its inner chunk; other errors pass through. */
function inFrame(e: unknown, i: number | undefined, chunkIds?: readonly number[]): unknown {
  if (!(e instanceof CorruptShard) || i === undefined) return e;
  return new CorruptShard(`inner chunk ${chunkIds?.[i] ?? i}: ${e.message}`, e.key);
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
    if (bloscNeedsOtherCodec(data)) return numcodecsBackend.bloscDecode(data, expectedLength, key);
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
