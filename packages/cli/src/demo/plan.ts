import type { Profile, Region, StreamSchema } from "@zarr-stream/spec";
import { UsageError } from "../command-line.js";
import { type Grid, latitudes, longitudes } from "./field.js";

export interface DemoConfig {
  /** Store directory; must not exist yet (or be empty). */
  out: string;
  writers: number;
  records: number;
  profile: Profile;
  grid: Grid;
  /** Records per time shard, and how many records each commit covers. */
  commitEvery: number;
  /** Create the store with its manifest in the paged form (WriterOptions.manifestPages). */
  manifestPages?: boolean;
}

export interface Split {
  /** Writers along lat and along lon. */
  nLat: number;
  nLon: number;
  shardLat: number;
  shardLon: number;
  /** Region of writer w (writer 0 is the owner). */
  regions: Region[];
}

/**
 * Splits the grid into `writers` shard-aligned blocks: writers = a x b with blocks as square as the
 * grid allows, each block exactly one shard wide, so no shard object has two writers (seed §4).
 */
export function splitGrid(grid: Grid, writers: number): Split {
  let best: { a: number; b: number; score: number } | undefined;
  for (let a = 1; a <= writers; a++) {
    if (writers % a !== 0) continue;
    const b = writers / a;
    if (a > grid.nLat || b > grid.nLon) continue;
    const sLat = Math.ceil(grid.nLat / a);
    const sLon = Math.ceil(grid.nLon / b);
    // every block must be non-empty once edges are rounded up to whole shards
    if ((a - 1) * sLat >= grid.nLat || (b - 1) * sLon >= grid.nLon) continue;
    const score = Math.abs(Math.log(sLat / sLon)) + 1e-3 * Math.abs(a - b);
    if (best === undefined || score < best.score) best = { a, b, score };
  }
  if (best === undefined) {
    throw new UsageError(
      `--writers ${writers} cannot split a ${grid.nLat}x${grid.nLon} grid into non-empty shard-aligned blocks`,
    );
  }
  const shardLat = Math.ceil(grid.nLat / best.a);
  const shardLon = Math.ceil(grid.nLon / best.b);
  const regions: Region[] = [];
  for (let i = 0; i < best.a; i++) {
    for (let j = 0; j < best.b; j++) {
      regions.push({
        lat: [i * shardLat, Math.min(grid.nLat, (i + 1) * shardLat)],
        lon: [j * shardLon, Math.min(grid.nLon, (j + 1) * shardLon)],
      });
    }
  }
  return { nLat: best.a, nLon: best.b, shardLat, shardLon, regions };
}

/** Half the shard when that divides it: a few inner chunks per shard keeps partial reads cheap. */
function innerChunk(shard: number): number {
  return shard % 2 === 0 ? shard / 2 : shard;
}

/** The demo's stream schema, with the CF attributes xarray and the plot use. */
export function demoSchema(cfg: DemoConfig, split: Split): StreamSchema {
  const { nLat, nLon } = cfg.grid;
  return {
    dims: [
      ["time", 0],
      ["lat", nLat],
      ["lon", nLon],
    ],
    time_dim: "time",
    time_mode: "append",
    vars: [
      {
        name: "temperature",
        dims: ["time", "lat", "lon"],
        dtype: "float32",
        attrs: { units: "K", long_name: "near-surface air temperature", standard_name: "air_temperature" },
      },
    ],
    statics: [
      {
        name: "land_mask",
        dims: ["lat", "lon"],
        dtype: "uint8",
        attrs: {
          long_name: "land mask",
          standard_name: "land_binary_mask",
          units: "1",
          flag_values: [0, 1],
          flag_meanings: "sea land",
        },
      },
    ],
    chunk_shape: { time: 1, lat: innerChunk(split.shardLat), lon: innerChunk(split.shardLon) },
    shard_shape: { time: cfg.commitEvery, lat: split.shardLat, lon: split.shardLon },
    profile: cfg.profile,
    coords: {
      time: {
        attrs: {
          units: "seconds since 2000-01-01 00:00:00",
          calendar: "standard",
          standard_name: "time",
          long_name: "time",
          axis: "T",
        },
      },
      lat: {
        values: latitudes(nLat),
        attrs: { units: "degrees_north", standard_name: "latitude", long_name: "latitude", axis: "Y" },
      },
      lon: {
        values: longitudes(nLon),
        attrs: { units: "degrees_east", standard_name: "longitude", long_name: "longitude", axis: "X" },
      },
    },
    attrs: {
      title: "zarr-stream demo: a warm anomaly advected over a made-up planet",
      Conventions: "CF-1.10",
      source: "zstream demo (synthetic field, domain-decomposed writers)",
    },
  };
}
