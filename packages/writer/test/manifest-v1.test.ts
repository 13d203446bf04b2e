import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fillGenerated, type StreamSchema } from "@zarr-stream/spec";
import { MemoryStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "../src/index.js";

/** EarthSciIO's own v1 write-conformance case (reference facts): time x lat 3 x lon 4, two float64 vars. */
const V1_CASE: StreamSchema = {
  dims: [
    ["time", 0],
    ["lat", 3],
    ["lon", 4],
  ],
  time_dim: "time",
  time_mode: "append",
  vars: [
    { name: "temperature", dims: ["time", "lat", "lon"], dtype: "float64" },
    { name: "pressure", dims: ["time", "lat", "lon"], dtype: "float64" },
  ],
  statics: [],
  chunk_shape: { time: 1, lat: 3, lon: 2 },
  shard_shape: { time: 2, lat: 3, lon: 4 },
  profile: "diagnostic",
  coords: {
    lat: { values: [10, 20, 30], attrs: { units: "degrees_north" } },
    lon: { values: [0, 90, 180, 270] },
  },
  attrs: { title: "v1 case", Conventions: "CF-1.8" },
};

/**
 * The manifest the Julia/Rust v1 writers produce for that case, written out by hand in their spelling:
 * serde_json pretty printing (2-space indent, insertion order, floats with a fraction, no final newline).
 */
const EXPECTED = `{
  "schema": "earthsciio/output-manifest/v1",
  "base_url": "file:///data/v1case.zarr",
  "format": "zarr",
  "zarr_format": 3,
  "profile": "diagnostic",
  "codec": {
    "id": "blosc",
    "cname": "zstd",
    "clevel": 5,
    "shuffle": "shuffle"
  },
  "time_dim": "time",
  "dims": [
    {
      "name": "time",
      "length": 4
    },
    {
      "name": "lat",
      "length": 3
    },
    {
      "name": "lon",
      "length": 4
    }
  ],
  "vars": [
    {
      "name": "temperature",
      "dims": [
        "time",
        "lat",
        "lon"
      ],
      "dtype": "float64"
    },
    {
      "name": "pressure",
      "dims": [
        "time",
        "lat",
        "lon"
      ],
      "dtype": "float64"
    }
  ],
  "chunk_shape": {
    "time": 1,
    "lat": 3,
    "lon": 2
  },
  "shard_shape": {
    "time": 2,
    "lat": 3,
    "lon": 4
  },
  "time_shards": [
    {
      "index": 0,
      "t_start": 0.0,
      "t_end": 3600.0,
      "n": 2
    },
    {
      "index": 1,
      "t_start": 7200.0,
      "t_end": 10800.0,
      "n": 2
    }
  ],
  "last_t": 10800.0,
  "n_records": 4,
  "created_at": "2026-08-01T12:00:00Z"
}`;

describe("§8.1 manifest v1 compatibility", () => {
  it("a Single append store without statics writes the Julia/Rust v1 manifest byte for byte", async () => {
    const store = new MemoryStore();
    const w = await ZarrStreamWriter.create(
      store,
      V1_CASE,
      { kind: "single" },
      {},
      {
        baseUrl: "file:///data/v1case.zarr",
        now: () => new Date("2026-08-01T12:00:00.250Z"),
      },
    );
    for (let r = 0; r < 4; r++) {
      const box = { lat: [0, 3] as [number, number], lon: [0, 4] as [number, number] };
      await w.writeRecord(3600 * r, {
        temperature: fillGenerated("float64", 1, r, ["lat", "lon"], box) as Float64Array,
        pressure: fillGenerated("float64", 2, r, ["lat", "lon"], box) as Float64Array,
      });
      if (r === 2) await w.flush(); // a partial commit in the middle replaces, not adds, its shard entry
    }
    await w.close();
    const text = new TextDecoder().decode(await store.get("output_manifest.json"));
    assert.equal(text, EXPECTED);
  });
});
