export { canonicalJson, canonicalJsonUtf8 } from "./canonical-json.js";
export {
  validateCommitToken,
  validateOutputManifest,
  validateOutputManifestV1,
  validateOutputManifestV2,
  validateRegion,
  validateRole,
} from "./documents.js";
export { itemSize } from "./dtype.js";
export * from "./errors.js";
export { approximateNumber, IntegralFloat, parseJsonExact, stringifyJsonExact } from "./exact-json.js";
export { type FingerprintDocument, fingerprintDocument, schemaFingerprint } from "./fingerprint.js";
export { formatFloat, pythonFloatRepr } from "./float.js";
export { fillGenerated, type GeneratedArray, generatorValue } from "./generator.js";
export { schemaFromManifest } from "./manifest.js";
export {
  indexedTimeShards,
  indexPages,
  isPagedManifest,
  type ListBlock,
  MANIFEST_INDEX_PAGE_SIZE,
  MANIFEST_PAGE_PREFIX,
  MANIFEST_PAGE_SIZE,
  type ManifestPage,
  type ManifestPageFetch,
  makeManifestPage,
  manifestPageBytes,
  manifestPageKey,
  type PagedEntry,
  type PagedList,
  pagedManifest,
  pageManifest,
  resolveManifestPages,
  type StoredPages,
  sha256Hex,
  splitPagedList,
  validateManifestPage,
} from "./manifest-pages.js";
export { nodeNameProblem } from "./node-names.js";
export {
  canonicalRegion,
  canonicalRegionJson,
  checkRegionAligned,
  isPartitioned,
  normalizeRegion,
  ownedShardRanges,
  regionDims,
  shardKeysFor,
  writesShardsOf,
} from "./regions.js";
export { SCHEMA_FILES, schemaFileText } from "./schema-files.js";
export { commitTokenJsonSchema } from "./schemas/commit-token.js";
export * from "./schemas/conformance.js";
export * from "./schemas/journal-row.js";
export {
  outputManifestV1JsonSchema,
  outputManifestV2JsonSchema,
  outputManifestV2PagedJsonSchema,
} from "./schemas/output-manifest.js";
export { regionJsonSchema, roleJsonSchema } from "./schemas/role.js";
export { streamSchemaJsonSchema } from "./schemas/stream-schema.js";
export { zarrArrayJsonSchema, zarrGroupJsonSchema } from "./schemas/zarr.js";
export { defineSchema, validateStreamSchema } from "./stream-schema.js";
export { checkTiling, type WriterRegion } from "./tiling.js";
export * from "./types.js";
export { makeValidator } from "./validate.js";
export { validateZarrArrayMetadata, validateZarrGroupMetadata } from "./zarr-documents.js";
export type {
  ZarrArrayMetadata,
  ZarrCodecMetadata,
  ZarrFillValue,
  ZarrGroupMetadata,
  ZarrNamedConfig,
} from "./zarr-metadata.js";
