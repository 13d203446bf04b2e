import type { DType, TypedArray } from "@zarr-stream/spec";

/**
 * The model of a Zarr v3 codec pipeline, as zarrs and zarrita have it: zero or more array→array codecs,
 * exactly one array→bytes codec, zero or more bytes→bytes codecs. Encoding runs them in that order and
 * decoding in reverse; each codec is built from its metadata by the registry (codec-registry.ts), knowing
 * the chunk representation that reaches it.
 */

/** What a codec sees of one chunk: its shape (C order), element type and fill value. */
export interface ChunkSpec {
  readonly shape: readonly number[];
  readonly dtype: DType;
  readonly fill: number | bigint;
}

/** Rearranges a chunk's elements (transpose); the element type stays. */
export interface ArrayToArrayCodec {
  readonly kind: "array_to_array";
  readonly name: string;
  /** The representation handed to the next codec, given the one this codec receives. */
  encodedSpec(decoded: ChunkSpec): ChunkSpec;
  encode(data: TypedArray, decoded: ChunkSpec): TypedArray;
  decode(data: TypedArray, decoded: ChunkSpec): TypedArray;
}

/** Serialises a chunk (bytes, sharding_indexed). */
export interface ArrayToBytesCodec {
  readonly kind: "array_to_bytes";
  readonly name: string;
  /** The encoded length when the representation alone fixes it; undefined when it depends on the data. */
  encodedLength(decoded: ChunkSpec): number | undefined;
  encode(data: TypedArray, decoded: ChunkSpec): Promise<Uint8Array>;
  /** Throws CorruptShard naming `key` when the bytes do not decode to `decoded`. */
  decode(bytes: Uint8Array, decoded: ChunkSpec, key: string): Promise<TypedArray>;
}

/** Transforms bytes (compression, checksums). */
export interface BytesToBytesCodec {
  readonly kind: "bytes_to_bytes";
  readonly name: string;
  /** True when decoding needs the decoded length up front (zstd frames need not state it). */
  readonly needsDecodedLength: boolean;
  encodedLength(decodedLength: number | undefined): number | undefined;
  encode(bytes: Uint8Array): Promise<Uint8Array>;
  /** `decodedLength`, when known, is checked; throws CorruptShard naming `key` on bad input. */
  decode(bytes: Uint8Array, decodedLength: number | undefined, key: string): Promise<Uint8Array>;
}

export type Codec = ArrayToArrayCodec | ArrayToBytesCodec | BytesToBytesCodec;

/** A built pipeline: what the array→bytes codec of sharding holds twice (inner and index codecs). */
export interface ChunkPipeline {
  readonly spec: ChunkSpec;
  readonly arrayToArray: readonly ArrayToArrayCodec[];
  readonly arrayToBytes: ArrayToBytesCodec;
  readonly bytesToBytes: readonly BytesToBytesCodec[];
  /** The encoded length of every chunk when fixed (a shard index), else undefined. */
  encodedLength(): number | undefined;
  encode(data: TypedArray): Promise<Uint8Array>;
  decode(bytes: Uint8Array, key: string): Promise<TypedArray>;
}

/** Where a codec's metadata sits and what reaches it, for the factory that builds it. */
export interface CodecContext {
  /** The chunk representation reaching this codec (for bytes→bytes codecs: the one the serialiser got). */
  readonly spec: ChunkSpec;
  /** JSON pointer of the codec's object in `document`. */
  readonly pointer: string;
  readonly document: string;
  /** Builds a nested pipeline (sharding's inner and index codecs) from its metadata. */
  pipeline(codecs: unknown, spec: ChunkSpec, pointer: string): ChunkPipeline;
}

/** Builds a codec from its configuration; refuses a bad one with SchemaError or UnsupportedCodec. */
export type CodecFactory = (configuration: Record<string, unknown>, context: CodecContext) => Codec;
