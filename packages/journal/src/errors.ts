import { ZarrStreamError } from "@zarr-stream/spec";

export type JournalErrorReason =
  | "header-prefix"
  | "format"
  | "part"
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
