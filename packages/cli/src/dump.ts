import { dumpStore as conformanceDump } from "@zarr-stream/conformance";
import { type ConformanceDump, validateConformanceDump } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";

export interface DumpMeta {
  case: string;
  writer: string;
}

/** Every committed value of a store, read through the read-back API, as earthsciio/write-v2-dump/v1. */
export async function dumpStore(store: Store, meta: DumpMeta): Promise<ConformanceDump> {
  return validateConformanceDump(await conformanceDump(store, meta.case, { writer: meta.writer }));
}
