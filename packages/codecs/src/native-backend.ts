import { createRequire } from "node:module";
import type { Backend } from "./backend.js";
import type { CopyBoxesArgs, DecodeBoxesArgs } from "./copy-boxes.js";

import { checkDecodedLength, corruptChunk } from "./frame-checks.js";
import { LoneCallGate } from "./lone-call.js";

type Tail<T extends unknown[]> = T extends [unknown, ...infer R] ? R : never;
/** What an addon call returns: its value when run on this thread (now = 1), else a promise of it. */
type Result<Now extends 0 | 1, T> = Now extends 1 ? T : Promise<T>;

/** The exports of native/addon.c. */
interface Addon {
  bloscEncode(
    data: Uint8Array,
    clevel: number,
    shuffle: number,
    typesize: number,
    blocksize: number,
  ): Promise<Uint8Array>;
  /** now = 1: decoded on this thread and returned; else on the libuv pool. */
  bloscDecode<Now extends 0 | 1 = 0>(
    data: Uint8Array,
    expectedLength: number,
    now?: Now,
  ): Result<Now, Uint8Array>;
  zstdEncode(data: Uint8Array, level: number, checksum: number): Promise<Uint8Array>;
  zstdDecode<Now extends 0 | 1 = 0>(
    data: Uint8Array,
    expectedLength: number,
    now?: Now,
  ): Result<Now, Uint8Array>;
  crc32c(data: Uint8Array): Promise<number>;
  encodePacked(
    chunks: readonly (Uint8Array | undefined)[],
    zstd: 0 | 1,
    p1: number,
    p2: number,
    p3: number,
    p4: number,
    out: Uint8Array,
    offset: number,
    sizes: Uint32Array,
  ): Promise<number>;
  copyBoxes(...args: CopyBoxesArgs): Promise<void>;
  decodeBoxes<Now extends 0 | 1 = 0>(
    frames: readonly Uint8Array[],
    zstd: 0 | 1,
    ...rest: [...Tail<DecodeBoxesArgs>, now?: Now]
  ): Result<Now, void>;
  crc32cSync(data: Uint8Array): number;
  crc32cPortable(data: Uint8Array): number;
  info(): {
    blosc: string;
    zstd: string;
    zstdCompiledIn: boolean;
    crc32cHardware: boolean;
    shuffleSimd: string;
  };
}

// Below this size a trip through the libuv pool costs more than the checksum itself.
const CRC_SYNC_LIMIT = 1 << 16;

let loaded: { addon: Addon } | { error: string } | undefined;

/**
 * Loads build/Release/zstream_codecs.node once (built by scripts/build-native.mjs at install time), or the
 * addon at ZSTREAM_ADDON_PATH (the sanitizer test's instrumented build).
 */
export function loadAddon(): { addon: Addon } | { error: string } {
  if (!loaded) {
    try {
      // dist/src/native-backend.js → package root
      const path = process.env.ZSTREAM_ADDON_PATH || "../../build/Release/zstream_codecs.node";
      loaded = { addon: createRequire(import.meta.url)(path) as Addon };
    } catch (e) {
      loaded = { error: e instanceof Error ? e.message.split("\n")[0]! : String(e) };
    }
  }
  return loaded;
}

/** The addon's ZS_CORRUPT as a CorruptShard; decodeBoxes failures keep the index of their frame. */
function rethrow(e: unknown, key: string): never {
  if (e instanceof Error && (e as { code?: string }).code === "ZS_CORRUPT") {
    const frame = (e as { frame?: number }).frame;
    throw Object.assign(corruptChunk(key, e.message), frame === undefined ? {} : { frame });
  }
  throw e;
}

export function nativeBackend(addon: Addon): Backend {
  const gate = new LoneCallGate();
  /** A decode of `bytes` on this thread if it is a lone call (see lone-call.ts), else on the pool. */
  const decodeCall = <T>(bytes: number, call: <Now extends 0 | 1>(now: Now) => Result<Now, T>): Promise<T> =>
    gate.run(
      bytes,
      () => call(1),
      () => call(0),
    );
  const decodeOne = async (
    op: "bloscDecode" | "zstdDecode",
    data: Uint8Array,
    expected: number,
    key: string,
  ) => {
    const out = await decodeCall(expected, (now) => addon[op](data, expected, now)).catch((e: unknown) =>
      rethrow(e, key),
    );
    return checkDecodedLength(out, expected, key);
  };
  return {
    name: "native",
    bloscEncode: (data, clevel, shuffle, typesize) => addon.bloscEncode(data, clevel, shuffle, typesize, 0),
    bloscDecode: (data, expectedLength, key) => decodeOne("bloscDecode", data, expectedLength, key),
    zstdEncode: (data, level, checksum) => addon.zstdEncode(data, level, checksum ? 1 : 0),
    zstdDecode: (data, expectedLength, key) => decodeOne("zstdDecode", data, expectedLength, key),
    crc32c: (data) =>
      data.length < CRC_SYNC_LIMIT ? Promise.resolve(addon.crc32cSync(data)) : addon.crc32c(data),
    decodeBoxes(spec, key, frames, ...rest) {
      const zstd = spec.kind === "zstd" ? 1 : 0;
      const [chunkShape, itemSize] = rest;
      const bytes =
        frames.length === 1 ? chunkShape.reduce((p, n) => p * n, itemSize) : Number.POSITIVE_INFINITY;
      return decodeCall(bytes, (now) => addon.decodeBoxes(frames, zstd, ...rest, now)).catch((e: unknown) =>
        rethrow(e, key),
      );
    },
    copyBoxes: (...args) => addon.copyBoxes(...args),
    encodePacked: (spec, chunks, out, offset, sizes) =>
      spec.kind === "blosc"
        ? addon.encodePacked(chunks, 0, spec.clevel, spec.shuffle, spec.typesize, 0, out, offset, sizes)
        : addon.encodePacked(chunks, 1, spec.level, spec.checksum ? 1 : 0, 0, 0, out, offset, sizes),
  };
}
