import { SchemaError, ZarrStreamError } from "@zarr-stream/spec";

/** A claim is held by someone else (or by nobody we can act for); never taken over, even when stale. */
export class ClaimConflict extends ZarrStreamError {
  override name = "ClaimConflict";
  constructor(
    message: string,
    readonly domain: string,
    readonly owner: string,
    readonly stale: boolean,
    readonly ageS: number,
  ) {
    super(message);
  }
}

/** A `.firecube/` document read from the store is not what the format allows. `line` is 1-based, 0 = whole file. */
export class ControlPlaneCorrupt extends ZarrStreamError {
  override name = "ControlPlaneCorrupt";
  constructor(
    message: string,
    readonly file: string,
    readonly line = 0,
  ) {
    super(message);
  }
}

export interface FieldDiff {
  path: string;
  recorded: unknown;
  declared: unknown;
}

/** Precedence row 5: the recorded resolved index disagrees with the declaration. */
export class ResolvedIndexConflict extends ZarrStreamError {
  override name = "ResolvedIndexConflict";
  constructor(
    message: string,
    readonly diff: FieldDiff[],
    readonly recordedHash: string,
    readonly declaredHash: string,
  ) {
    super(message);
  }
}

export type ManifestErrorReason =
  | "unsupported-schema-version"
  | "identity-hash-mismatch"
  | "attrs-without-record"
  | "attrs-drift"
  | "unreadable-record"
  | "concurrent-record";

/** Precedence rows 4, 6, 7 and a tampered record: the index record and the store disagree in a way we refuse to guess about. */
export class ManifestError extends ZarrStreamError {
  override name = "ManifestError";
  constructor(
    message: string,
    readonly reason: ManifestErrorReason,
    readonly file = "",
  ) {
    super(message);
  }
}

/**
 * A store without a control plane (no `.firecube/` object): the control-plane commands have nothing to
 * list or recover there, and refuse rather than create one.
 */
export class NoControlPlane extends ZarrStreamError {
  override name = "NoControlPlane";
}

export type RebuildRefusalReason = "blocking-claims" | "live-runs";

/** A snapshot rebuild is refused while claims or live/orphaned runs exist. */
export class SnapshotRebuildRefused extends ZarrStreamError {
  override name = "SnapshotRebuildRefused";
  constructor(
    message: string,
    readonly reason: RebuildRefusalReason,
    readonly blockers: string[],
  ) {
    super(message);
  }
}

/**
 * A number handed to the control plane that JSON text cannot carry exactly: an integer beyond 2^53 given
 * as a JS number (its digits are already rounded; a bigint carries them), NaN or ±Infinity. Raised while
 * the document is printed, before any byte of it is written. `pointer` is the JSON pointer of the number.
 */
export class InexactNumber extends SchemaError {
  override name = "InexactNumber";
}
