export { openArray, type RegionOptions, readArrayLayout, readArrayRegion } from "./array-region.js";
export {
  isV2,
  MANIFEST_KEY,
  parseJsonObject,
  readManifestVersioned,
  readOutputManifest,
  readOutputManifestIfPresent,
  requireV2,
} from "./manifest.js";
export { manifestPageRefs } from "./manifest-pages.js";
export { normalizePythonV1Spelling, usesPythonV1Spelling } from "./python-v1-spelling.js";
export {
  BLOB_KEY_PATTERN,
  blobObjectKey,
  checkBlobKey,
  isRecordCommitted,
  type ReadOptions,
  type ReadResult,
  readBlob,
  readRecord,
  readStatic,
} from "./read-back.js";
