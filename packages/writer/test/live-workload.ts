import type { Region } from "@zarr-stream/spec";
import { gridSchema } from "./helpers.js";

/**
 * The live-read run: an owner and 3 contributors on a lat split, a commit after every record. Chunks span
 * 2 records and time shards 4, so each flush re-encodes a chunk that holds a committed record and rewrites
 * its open shard with that record's bytes moved: the case a reader can tear. A writer's temperature shard
 * (4 x 16 x 5120 float64, about 140 KB compressed) is larger than a cheap store's 64 KiB first window, so a
 * read of a few lat rows is an index read and then body reads: two reads of one object that a rewrite can
 * fall between.
 */
export const LIVE_WRITERS = 4;
export const LIVE_LAT = 64;
export const LIVE_LON = 5120;
export const LIVE_SCHEMA = gridSchema({
  dims: [
    ["time", 0],
    ["lat", LIVE_LAT],
    ["lon", LIVE_LON],
  ],
  chunk_shape: { time: 2, lat: 1, lon: LIVE_LON / 2 },
  shard_shape: { time: 4, lat: LIVE_LAT / LIVE_WRITERS, lon: LIVE_LON },
  coords: {
    lat: { values: Array.from({ length: LIVE_LAT }, (_, i) => i), attrs: { units: "degrees_north" } },
    time: { attrs: { units: "s" } },
  },
});
const ROWS = LIVE_LAT / LIVE_WRITERS;
export const liveRegion = (id: number): Region => ({ lat: [ROWS * id, ROWS * (id + 1)] });
/** 1 to 3 lat rows; half of them start at a writer's last row, so about a third cross into the next region. */
export function latRows(pick: (n: number) => number): [number, number] {
  const lat0 = pick(2) === 0 ? pick(LIVE_LAT) : ROWS * (1 + pick(LIVE_WRITERS - 1)) - 1;
  return [lat0, Math.min(LIVE_LAT, lat0 + 1 + pick(3))];
}
export const liveT = (r: number) => 60 * (r + 1);
