import type { CodecSpec } from "./codec-spec.js";
import type { CopyBoxesArgs, DecodeBoxesArgs } from "./copy-boxes.js";
/** What each implementation provides; arguments are already validated and frames already checked. */
export interface Backend {
  readonly name: "native" | "wasm" | "numcodecs";
  bloscEncode(data: Uint8Array, clevel: number, shuffle: 0 | 1 | 2, typesize: number): Promise<Uint8Array>;
  bloscDecode(data: Uint8Array, expectedLength: number, key: string): Promise<Uint8Array>;
  zstdEncode(data: Uint8Array, level: number, checksum: boolean): Promise<Uint8Array>;
  zstdDecode(data: Uint8Array, expectedLength: number, key: string): Promise<Uint8Array>;
  crc32c(data: Uint8Array): Promise<number>;
  /** Several chunks into one buffer in one call (see encodeInto); absent: encodeInto loops over encode. */
  encodePacked?(
    spec: CodecSpec,
    chunks: readonly (Uint8Array | undefined)[],
    out: Uint8Array,
    offset: number,
    sizes: Uint32Array,
  ): Promise<number>;
  /** Frames decoded and scattered into one array on the pool (see decodeBoxes). */
  decodeBoxes?(spec: CodecSpec, key: string, ...args: DecodeBoxesArgs): Promise<void>;
  /** Strided box copies on the pool (see copyBoxes); absent: copyBoxes copies on the calling thread. */
  copyBoxes?(...args: CopyBoxesArgs): Promise<void>;
}
