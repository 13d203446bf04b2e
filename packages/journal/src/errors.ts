import { PublishConflict, ZarrStreamError } from "@zarr-stream/spec";

/**
 * The rules a part is checked against, by the producer before any upload and by every composer when it
 * reads (packages/journal/README.md, "What a part may hold"):
 * - `empty-header`: a CSV part has data lines under an empty first line;
 * - `header-too-long`: a CSV header line, or the journal's merged header, is longer than the readers' cap;
 * - `header-encoding`: a CSV header line is not UTF-8 (producer only: readers decode leniently);
 * - `line-break-in-cell`: a quoted CSV cell does not close on its own line;
 * - `bare-cr`: a CR that does not end a line (CRLF) or the part;
 * - `row-width`: a CSV data line has another number of cells than its header (producer only);
 * - `header-prefix`: invariant 1, a part header that is not a prefix of the journal's header.
 */
export type PartRule =
  | "empty-header"
  | "header-too-long"
  | "header-encoding"
  | "line-break-in-cell"
  | "bare-cr"
  | "row-width"
  | "header-prefix";

export type JournalErrorReason =
  | PartRule
  | "format"
  | "registry"
  | "part-index"
  | "missing-part"
  | "argument"
  | "zip";

/** A journal contract violation (seed 004): `reason` names the rule, the message names where. */
export class JournalError extends ZarrStreamError {
  override name = "JournalError";
  constructor(
    message: string,
    readonly reason: JournalErrorReason,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A part breaks one of the part rules; `reason` names it. Thrown before anything is uploaded or written. */
export class PartRefused extends JournalError {
  override name = "PartRefused";
  declare readonly reason: PartRule;
  constructor(message: string, rule: PartRule) {
    super(message, rule);
  }
}

/**
 * A caller that recognises retries by content (the CLI) lost a race to a concurrent publisher of the same
 * bytes: the row that won may be its own earlier run or another run with equal bytes, and the two cannot be
 * told apart, so nothing is registered and the caller decides (a rerun is then a retry of that row).
 */
export class DuplicatePublish extends PublishConflict {
  override name = "DuplicatePublish";
  constructor(
    message: string,
    readonly outputIdentifier: string,
  ) {
    super(message);
  }
}

/** The readers' cap on a CSV header line, in bytes, without a leading BOM and the terminator. */
export const MAX_HEADER_BYTES = 1 << 20;

export function headerTooLong(where: string, maxBytes: number, what = "header line"): PartRefused {
  return new PartRefused(`${where}: ${what} is longer than ${maxBytes} bytes`, "header-too-long");
}

/**
 * The SQLite registry was asked for where better-sqlite3 cannot be loaded: it is an optional peer
 * dependency (only the registry uses it, and it is a native build), so an install without it, or with its
 * addon built for another Node, lands here with the command that fixes it. `cause` is the loader's error.
 */
export class RegistryUnavailable extends JournalError {
  override name = "RegistryUnavailable";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, "registry", options);
  }
}
