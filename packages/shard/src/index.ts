export { allocTyped, itemSize } from "./dtype.js";
export {
  type ArrayLayout,
  arrayZarrJson,
  encodeZarrJson,
  groupZarrJson,
  parseArrayZarrJson,
  shardGrid,
  shardKey,
} from "./metadata.js";
export { readShardRegion } from "./ranged-read.js";
export {
  decodeShard,
  encodeShard,
  encodeShardChunks,
  parseShardIndex,
  type ShardIndex,
  shardIndexByteLength,
} from "./shard-format.js";
export { copyStrided } from "./strided.js";
