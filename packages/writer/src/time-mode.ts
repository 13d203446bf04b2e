import type { RecordArrays, StreamSchema } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import type { ArrayPlan } from "./array-plan.js";
import type { CommittedView } from "./committed-view.js";
import type { CommittedState } from "./manifest-doc.js";
import type { PendingWrites } from "./pending-writes.js";
import type { ShardObjects } from "./time-shard-buffers.js";

/** What a time mode works on: the handle's plans, fenced objects, committed view and pending set. */
export interface TimeModeContext {
  store: Store;
  schema: StreamSchema;
  plans: ArrayPlan[];
  objects: ShardObjects;
  view: CommittedView;
  pending: PendingWrites;
  /** The owner also streams the append time coordinate. */
  isOwner: boolean;
  writerId: number;
}

/** Where resume cuts the committed records: the first `keep` stay; `times` are their t when read. */
export interface Truncation {
  keep: number;
  times?: Float64Array;
}

/**
 * How records reach the time axis (seed §6): append (a running index, t increasing) or indexed (a fixed
 * axis, records in any order). The writer calls these and never branches on the mode itself.
 */
export interface TimeMode {
  /** Under a control plane an append store's owner takes the append claim. */
  readonly append: boolean;
  /** Seed §6.1; indexed mode refuses it. */
  writeRecord(t: number, arrays: RecordArrays): Promise<number>;
  /** Seed §6.2; append mode refuses it. */
  writeRecordAt(index: number, t: number, arrays: RecordArrays): Promise<void>;
  /** Whether a record blob may name `record` (indexed: it lies on the axis). */
  isOnAxis(record: number): boolean;
  /** Refuses a record blob for a record this writer has not written yet (append). */
  assertRecordWritten(record: number): void;
  /** Flush: writes every dirty time shard, a failed background write's included; the keys become pending. */
  writeDirty(): Promise<void>;
  /** The written records went into a token or a commit: buffers kept only for them are released. */
  handedOff(): void;
  /** The handle is closed: every buffer goes back at once (TimeShardBuffers.giveBack). */
  giveBack(): Promise<void>;
  /** A re-read manifest replaced the committed state. */
  adopt(state: CommittedState): void;
  /** Join: reloads this writer's part of the time shard the committed records end in (seed §5.4). */
  reloadOpen(): Promise<void>;
  /** Resume: refuses an `at` the mode cannot honour, before anything is read. */
  checkResumeAt(at: number | undefined): void;
  /** Resume: which committed records stay (append: those with t <= at; all when at is undefined). */
  truncationPoint(at: number | undefined): Promise<Truncation>;
  /**
   * Resume: adopts the truncation and reloads the open time shard. `persist` is the owner's: it writes
   * the truncation (shapes, manifest) before anyone adopts it.
   */
  resume(point: Truncation, persist: ((point: Truncation) => Promise<void>) | undefined): Promise<void>;
}
