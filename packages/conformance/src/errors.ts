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
