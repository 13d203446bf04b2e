import type { Region } from "@zarr-stream/spec";
import { gridSchema } from "./helpers.js";

/** The multi-process run: 8 writers on a 4x2 lat/lon split, 50 records, a commit every 5 (time shards of 4). */
export const MP_WRITERS = 8;
export const MP_RECORDS = 50;
export const MP_COMMIT_EVERY = 5;
export const MP_SCHEMA = gridSchema({
  dims: [
    ["time", 0],
    ["lat", 8],
    ["lon", 6],
  ],
  shard_shape: { time: 4, lat: 2, lon: 3 },
  coords: {
    lat: { values: [0, 1, 2, 3, 4, 5, 6, 7], attrs: { units: "degrees_north" } },
    time: { attrs: { units: "s" } },
  },
});
export const MP_REGIONS: Region[] = mpRegions(MP_WRITERS);

/** Regions of a run of 8 writers (lat x lon 4x2) or 4 (lat only, as `mpirun -n 4` starts them). */
export function mpRegions(count: number): Region[] {
  if (count === 4) return Array.from({ length: 4 }, (_, id) => ({ lat: [2 * id, 2 * id + 2] }));
  if (count !== MP_WRITERS)
    throw new Error(`the workload splits into 4 or ${MP_WRITERS} writers, not ${count}`);
  return Array.from({ length: count }, (_, id) => ({
    lat: [2 * Math.floor(id / 2), 2 * Math.floor(id / 2) + 2],
    lon: [3 * (id % 2), 3 * (id % 2) + 3],
  }));
}
export const mpT = (r: number) => 3600 * (r + 1);
