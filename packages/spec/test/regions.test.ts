import assert from "node:assert/strict";
import { test } from "node:test";
import {
  canonicalRegionJson,
  checkRegionAligned,
  isPartitioned,
  normalizeRegion,
  ownedShardRanges,
  RegionNotShardAligned,
  regionDims,
  SchemaError,
  shardKeysFor,
  writesShardsOf,
} from "../src/index.js";

const dims: [string, number][] = [
  ["time", 0],
  ["lat", 10],
  ["lon", 8],
];
const shard = { time: 2, lat: 4, lon: 4 };

test("§4 normalizeRegion fills omitted dims with their full extent", () => {
  assert.deepEqual(normalizeRegion({ lon: [4, 8] }, dims, "time"), { lat: [0, 10], lon: [4, 8] });
  assert.deepEqual(normalizeRegion({}, dims, "time"), { lat: [0, 10], lon: [0, 8] });
});

test("§4 normalizeRegion refuses the time dim and unknown dims, naming them", () => {
  assert.throws(
    () => normalizeRegion({ time: [0, 1] }, dims, "time"),
    (e: SchemaError) => e instanceof SchemaError && e.pointer === "/time" && e.message.includes('"time"'),
  );
  assert.throws(
    () => normalizeRegion({ depth: [0, 1] }, dims, "time"),
    (e: SchemaError) => e instanceof SchemaError && e.message.includes('"depth"'),
  );
  assert.throws(() => normalizeRegion({ lat: [0, 1.5] as [number, number] }, dims, "time"), SchemaError);
});

test("§4 alignment: start on a shard edge, stop on a shard edge or the dim end, inside the dim", () => {
  checkRegionAligned({ lat: [4, 10], lon: [0, 4] }, dims, shard);
  checkRegionAligned({ lat: [0, 8] }, dims, shard);
  const bad: Record<string, [number, number]>[] = [
    { lat: [2, 8] },
    { lat: [4, 9] },
    { lat: [8, 12] },
    { lat: [4, 4] },
    { lat: [-4, 4] },
    { lat: [0, 4.5] },
  ];
  for (const region of bad) {
    assert.throws(
      () => checkRegionAligned(region, dims, shard),
      (e: RegionNotShardAligned) => e instanceof RegionNotShardAligned && e.dim === "lat",
      JSON.stringify(region),
    );
  }
});

test("§4 region dims are sorted and the canonical wire form orders keys by dim name", () => {
  assert.deepEqual(regionDims({ lon: [0, 4], lat: [0, 4] }), ["lat", "lon"]);
  assert.equal(canonicalRegionJson({ lon: [0, 4], lat: [4, 8] }), '{"lat":[4,8],"lon":[0,4]}');
});

test("§4 partly partitioned variables are written only by the writer at 0 on the dims they lack", () => {
  const rd = ["lat", "lon"];
  assert.equal(isPartitioned(["time", "lon"], rd), true);
  assert.equal(isPartitioned(["time"], rd), false);
  // [time, lon] under a {lat, lon} split: only writers whose lat range starts at 0
  assert.equal(writesShardsOf(["time", "lon"], { lat: [0, 4], lon: [4, 8] }, rd, false), true);
  assert.equal(writesShardsOf(["time", "lon"], { lat: [4, 10], lon: [4, 8] }, rd, false), false);
  // fully partitioned: every writer writes its own shards
  assert.equal(writesShardsOf(["time", "lat", "lon"], { lat: [4, 10], lon: [4, 8] }, rd, false), true);
  // replicated: only the owner
  assert.equal(writesShardsOf(["time"], { lat: [0, 4], lon: [0, 4] }, rd, false), false);
  assert.equal(writesShardsOf(["time"], { lat: [4, 10], lon: [4, 8] }, rd, true), true);
});

test("§1 shard ranges and keys of a region (partial last shard included, time dim from the caller)", () => {
  const ranges = ownedShardRanges(["time", "lat", "lon"], { lat: [4, 10], lon: [0, 4] }, shard, dims, "time");
  assert.deepEqual(ranges, { lat: [1, 3], lon: [0, 1] });
  assert.deepEqual(shardKeysFor("T", ["time", "lat", "lon"], ranges, "time", [3, 5]), [
    "T/c/3/1/0",
    "T/c/3/2/0",
    "T/c/4/1/0",
    "T/c/4/2/0",
  ]);
  const full = ownedShardRanges(["lon"], { lat: [4, 10] }, shard, dims, "time");
  assert.deepEqual(shardKeysFor("s", ["lon"], full, "time"), ["s/c/0", "s/c/1"]);
  assert.deepEqual(shardKeysFor("scalar", [], {}, "time"), ["scalar/c"]);
  assert.throws(() => shardKeysFor("T", ["time", "lat"], ranges, "time"), SchemaError);
});
