import { CorruptShard, SchemaError } from "@zarr-stream/spec";
import { activeBackend } from "./backend-choice.js";
import { type CodecSpec, checkCodecSpec, MAX_CHUNK_BYTES } from "./codec-spec.js";
import {
  type CopyBoxesArgs,
  checkBoxes,
  checkDecodeBoxes,
  copyBoxesHere,
  type DecodeBoxesArgs,
} from "./copy-boxes.js";
import { bloscNeedsOtherCodec, checkBloscFrame, checkZstdFrame } from "./frame-checks.js";
import { numcodecsBackend } from "./numcodecs-backend.js";

/*
 * The codec calls, the same on every platform: arguments are checked here (typed errors before any
 * work), then handed to the active backend (backend-choice.ts), which the entry point of the platform
 * provides.
 */

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
  const b = activeBackend();
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
  const b = activeBackend();
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
 * the JS thread; it exists for the writer's record-to-chunk gather. Everything is checked
 * before any byte moves (SchemaError); leave the buffers alone until the promise settles.
 */
export async function copyBoxes(...args: CopyBoxesArgs): Promise<void> {
  checkBoxes(...args);
  const b = activeBackend();
  if (b.copyBoxes) return b.copyBoxes(...args);
  copyBoxesHere(...args);
}

/**
 * Decodes each frame (one inner chunk of shape `chunkShape`) and copies its box into `target` (shape
 * `targetShape`): `boxes` holds, per frame, its src start in the chunk, dst start in the target and count
 * (3·rank numbers). The read side's counterpart of encodeInto: on the native backend a shard's frames are
 * split over the libuv pool's threads, with no per-chunk buffer where a box is a contiguous run of the
 * target. Every frame gets decode()'s checks; the first frame (in `frames` order) that fails is a
 * CorruptShard naming the key and the frame's position in `frames`, and the target's boxes then hold
 * unspecified bytes. `chunkIds` (default: positions) is what the error calls each frame. The boxes'
 * destinations must not overlap (a shard's chunks each have their own place): frames decode in parallel,
 * so where two boxes share target elements, which one lands there is unspecified.
 */
export async function decodeBoxes(
  ...[spec, ...args]: [spec: CodecSpec, ...DecodeBoxesArgs, key?: string, chunkIds?: readonly number[]]
): Promise<void> {
  const [frames, chunkShape, itemSize, target, targetShape, boxes, key = "", chunkIds] = args;
  checkCodecSpec(spec);
  checkDecodeBoxes(frames, chunkShape, itemSize, target, targetShape, boxes);
  const chunkBytes = chunkShape.reduce((p, n) => p * n, itemSize);
  // The limit decode() puts on expectedLength. The structural checks do not bound it (a zstd frame need
  // not record its content size), and the native job multiplies the shape out in size_t, where a larger
  // chunk can wrap to a buffer smaller than the boxes it copies from.
  if (chunkBytes > MAX_CHUNK_BYTES) {
    throw new SchemaError(
      `a chunk of shape [${chunkShape.join(", ")}] is ${chunkBytes} bytes; a chunk is at most ${MAX_CHUNK_BYTES}`,
      "/chunkShape",
      "codec",
    );
  }
  frames.forEach((f, i) => {
    try {
      if (spec.kind === "blosc") checkBloscFrame(f, chunkBytes, key);
      else checkZstdFrame(f, chunkBytes, key);
    } catch (e) {
      throw inFrame(e, i, chunkIds);
    }
  });
  const b = activeBackend();
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
  const b = activeBackend();
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
  return activeBackend().crc32c(data);
}
