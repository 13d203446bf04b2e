export { type CliIo, JOURNAL_USAGE, runJournalCli } from "./cli.js";
export {
  type ByteSink,
  type ComposeOptions,
  composeJournal,
  composeJournalAsync,
  composeJournalBlocks,
  composeJournalToStream,
} from "./compose.js";
export {
  assertHeaderPrefix,
  mergeCsvHeaders,
  parseCsvHeaderLine,
  renderCsvHeaderLine,
} from "./csv-header.js";
export {
  DuplicatePublish,
  JournalError,
  type JournalErrorReason,
  MAX_HEADER_BYTES,
  PartRefused,
  type PartRule,
  RegistryUnavailable,
} from "./errors.js";
export { headerCells, type StoredPart, storedPart } from "./part-rules.js";
export { type PruneResult, pruneJournal } from "./prune.js";
export { type PublishOptions, type PublishResult, type PublishStep, publishPart } from "./publish.js";
export type { JournalRegistry, RowPatch } from "./registry.js";
export { type KeepReason, planArchive, planRetention, type RetentionPlan } from "./retention.js";
export { DEFAULT_MAX_PARTS, type JournalRow, outputIdentifierOf, partIdentity } from "./row.js";
export {
  composeHeadToStream,
  exportSession,
  exportSessionToStream,
  readPartBlob,
  SESSION_INDEX_ENTRY,
  type SessionIndexEntry,
} from "./session.js";
export { filePartSource, type PartSource, storePartSource } from "./sources.js";
export { SqliteJournalRegistry, type SqliteRegistryOptions } from "./sqlite-registry.js";
export {
  advanceWatermark,
  type FacetCoverage,
  nextWatermark,
  type ParentListing,
  type WatermarkDecision,
} from "./watermark.js";
