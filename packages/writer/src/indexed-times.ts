import type { StreamSchema } from "@zarr-stream/spec";

/** The fixed time axis of an indexed store, or undefined in append mode. */
export function indexedTimes(schema: StreamSchema): number[] | undefined {
  return schema.time_mode === "append" ? undefined : schema.time_mode.indexed.times;
}
