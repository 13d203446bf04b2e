import { ZarrStreamError } from "@zarr-stream/spec";

/** A corpus case did not run as its script says: an op failed that should not have, or vice versa. */
export class ConformanceFailure extends ZarrStreamError {
  override name = "ConformanceFailure";
  constructor(
    message: string,
    readonly caseName: string,
    readonly op: number,
  ) {
    super(message);
  }
}

/**
 * A case asks a writer of another binding for what this driver does not hand it (e.g. an external owner's
 * resume). Not a contract error, so it never satisfies an op's expect_error: such a case cannot pass by
 * its writer lacking the op.
 */
export class NotRunnable extends Error {
  override name = "NotRunnable";
}
