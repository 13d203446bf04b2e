/* What both entry points (index.ts for Node, browser.ts) export: the calls, the specs and the choice. */
export { type CodecBackendName, codecBackend, setCodecBackend } from "./backend-choice.js";
export {
  copyBoxes,
  crc32c,
  decode,
  decodeBoxes,
  encode,
  encodeInto,
  maxEncodedLength,
} from "./codec-calls.js";
export { type CodecSpec, MAX_CHUNK_BYTES, profileCodec } from "./codec-spec.js";
export { boxStride } from "./copy-boxes.js";
