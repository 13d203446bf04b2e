export { type CliIo, JOURNAL_USAGE, runJournalCli } from "./cli.js";
export {
  type ByteSink,
  type ComposeOptions,
  composeJournal,
  composeJournalAsync,
  composeJournalToStream,
} from "./compose.js";
export {
  assertHeaderPrefix,
  mergeCsvHeaders,
  parseCsvHeaderLine,
  renderCsvHeaderLine,
} from "./csv-header.js";
export { JournalError, type JournalErrorReason, RegistryUnavailable } from "./errors.js";
export { pruneJournal } from "./prune.js";
export { type PublishOptions, type PublishResult, type PublishStep, publishPart } from "./publish.js";
export type { JournalRegistry, RowPatch } from "./registry.js";
export { type KeepReason, planArchive, planRetention, type RetentionPlan } from "./retention.js";
export { DEFAULT_MAX_PARTS, type JournalRow, outputIdentifierOf } from "./row.js";
export {
  composeHeadToStream,
  exportSession,
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
