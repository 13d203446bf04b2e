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
