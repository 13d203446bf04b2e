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
export const MP_REGIONS: Region[] = Array.from({ length: MP_WRITERS }, (_, id) => ({
  lat: [2 * Math.floor(id / 2), 2 * Math.floor(id / 2) + 2],
  lon: [3 * (id % 2), 3 * (id % 2) + 3],
}));
export const mpT = (r: number) => 3600 * (r + 1);
