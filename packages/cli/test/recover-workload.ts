import type { StreamSchema } from "@zarr-stream/spec";
import type { WriterOptions } from "@zarr-stream/writer";

/**
 * A small append run under the control plane, with staleness thresholds short enough for a test yet
 * 15 heartbeats long, so a heartbeat delayed by a busy machine does not cost the live run its claim.
 */
export const SCHEMA: StreamSchema = {
  dims: [
    ["time", 0],
    ["x", 8],
  ],
  time_dim: "time",
  time_mode: "append",
  vars: [{ name: "u", dims: ["time", "x"], dtype: "float64" }],
  statics: [],
  chunk_shape: { time: 1, x: 4 },
  shard_shape: { time: 4, x: 8 },
  profile: "diagnostic",
};
export const N_RECORDS = 40;
export const COMMIT_EVERY = 4;
export const STALE_S = 3;

export function options(ownerId: string): WriterOptions {
  return {
    controlPlane: {
      product: "DEMO",
      options: {
        ownerId,
        claimStaleThresholdS: STALE_S,
        runStaleThresholdS: STALE_S,
        claimHeartbeatIntervalS: 0.2,
        runHeartbeatIntervalS: 0.2,
      },
    },
  };
}

export const recordOf = (r: number) => ({ u: Float64Array.from({ length: 8 }, (_, i) => 100 * r + i) });
