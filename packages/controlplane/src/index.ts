export { type ClaimObserver, monotonicObserver } from "./claim-observer.js";
export {
  type ClaimView,
  type ClearedClaim,
  type CorruptClaim,
  type HeldClaim,
  isStale as isClaimStale,
} from "./claims.js";
export { type CliIo, CONTROL_PLANE_USAGE, runControlPlaneCli } from "./cli.js";
export { ControlPlane, type ControlPlaneOptions, type StartRunOptions } from "./control-plane.js";
export type { ClaimDoc, Clock, JsonNumber, JsonObject, RunRecordDoc, WalEvent } from "./documents.js";
export {
  ClaimConflict,
  ControlPlaneCorrupt,
  type FieldDiff,
  InexactNumber,
  ManifestError,
  type ManifestErrorReason,
  NoControlPlane,
  ResolvedIndexConflict,
  SnapshotRebuildRefused,
} from "./errors.js";
export { resolvedIndexIdentityHash, type SlotIndexModel, slotIndexIdentityHash } from "./identity.js";
export type { HistoryEntry, ProjectedState } from "./projection.js";
export {
  ATTR_INDEX,
  ATTR_INDEX_HASH,
  type EnsureOutcome,
  type EnsureResult,
  type IndexVerification,
  type ResolvedIndexDeclaration,
  type ResolvedIndexRecord,
} from "./resolved-index.js";
export { type RootAttributes, zarrJsonAttributes } from "./root-attributes.js";
export { ATTR_SLOT_MODEL, ATTR_SLOT_MODEL_HASH, SLOT_INDEX_CLAIM } from "./slot-index.js";
export type { LatestDoc, ReadStateResult, RebuildResult, SnapshotMeta, SnapshotStatus } from "./snapshots.js";
export type { OrphanReason, RunState, RunView } from "./wal-reader.js";
export { eventTypeForStatus } from "./wal-writer.js";
