import type { Region } from "@zarr-stream/spec";
import { gridSchema } from "./helpers.js";

/**
 * The live-read run: an owner and 3 contributors on a lat split, a commit after every record. Chunks span
 * 2 records and time shards 4, so each flush re-encodes a chunk that holds a committed record and rewrites
 * its open shard with that record's bytes moved: the case a reader can tear.
 */
export const LIVE_WRITERS = 4;
export const LIVE_SCHEMA = gridSchema({
  dims: [
    ["time", 0],
    ["lat", 8],
    ["lon", 6],
  ],
  chunk_shape: { time: 2, lat: 1, lon: 3 },
  shard_shape: { time: 4, lat: 2, lon: 6 },
  coords: {
    lat: { values: [0, 1, 2, 3, 4, 5, 6, 7], attrs: { units: "degrees_north" } },
    time: { attrs: { units: "s" } },
  },
});
export const liveRegion = (id: number): Region => ({ lat: [2 * id, 2 * id + 2] });
export const liveT = (r: number) => 60 * (r + 1);
