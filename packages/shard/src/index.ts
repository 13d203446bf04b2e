export { fillChunkPart, readChunkInto } from "./chunk-read.js";
export type {
  ArrayToArrayCodec,
  ArrayToBytesCodec,
  BytesToBytesCodec,
  ChunkPipeline,
  ChunkSpec,
  Codec,
  CodecContext,
  CodecFactory,
} from "./codec-model.js";
export { buildPipeline } from "./codec-pipeline.js";
export { registerCodec, registeredCodecs } from "./codec-registry.js";
export { allocTyped, allocTypedUnfilled, bytesOf, itemSize, matchesDType } from "./dtype.js";
export {
  type ArrayLayout,
  arrayZarrJson,
  encodeZarrJson,
  groupZarrJson,
  parseArrayZarrJson,
  shardGrid,
  shardKey,
} from "./metadata.js";
export { SHARD_READ_ATTEMPTS } from "./pinned-read.js";
export { type ReadScratch, type ReadTarget, readShardInto, readShardRegion } from "./ranged-read.js";
export {
  LOCAL_PIECE,
  LOCAL_SHARD_WINDOW,
  SHARD_WINDOW,
  shardBytesBound,
  wholeShardWindow,
} from "./read-window.js";
export { settleAll, settleLanes } from "./settle.js";
export {
  decodeShard,
  encodeShard,
  encodeShardChunks,
  encodeShardChunksKnown,
  type KnownFrames,
  parseShardIndex,
  type ReusableBuffer,
  type ShardIndex,
  shardIndexByteLength,
  zeroBox,
} from "./shard-format.js";
export { copyStrided } from "./strided.js";
export { type ChunkKeyEncoding, chunkKey, openZarrArray, type ZarrArray } from "./zarr-array.js";
