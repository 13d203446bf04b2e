import { fixture } from "@zarr-stream/test-support/fixtures";
import fc from "fast-check";
import {
  type CommitToken,
  type OutputManifestV1,
  type OutputManifestV2,
  type StreamDType,
  type StreamSchema,
  schemaFingerprint,
  type ZarrArrayMetadata,
} from "../src/index.js";

export const schema: StreamSchema = {
  dims: [
    ["time", 0],
    ["lat", 3],
    ["lon", 4],
  ],
  time_dim: "time",
  time_mode: "append",
  vars: [
    { name: "temperature", dims: ["time", "lat", "lon"], dtype: "float64", attrs: { units: "K" } },
    { name: "pressure", dims: ["time", "lat", "lon"], dtype: "float32" },
  ],
  statics: [{ name: "orog", dims: ["lat", "lon"], dtype: "float64" }],
  chunk_shape: { time: 1, lat: 3, lon: 2 },
  shard_shape: { time: 2, lat: 3, lon: 4 },
  profile: "diagnostic",
  coords: { lat: { values: [0, 1, 2] }, time: { attrs: { units: "s" } } },
  attrs: { title: "t" },
};

export const token: CommitToken = {
  schema: "earthsciio/commit-token/v1",
  writer: 1,
  region: { lat: [2, 4] },
  fingerprint: `sha256:${"ab".repeat(32)}`,
  records: [
    { index: 0, t: 0 },
    { index: 1, t: 3600.5 },
  ],
  statics: ["dJ_du0"],
  blobs: [
    { scope: "record", record: 1, key: "rng" },
    { scope: "static", key: "seed.bin" },
  ],
  objects: ["temperature/c/0/1/0", "temperature/c/1/1/0"],
};

/** EarthSciIO's v1 write-conformance case as its Julia/Rust writers record it. */
export const manifestV1: OutputManifestV1 = fixture<OutputManifestV1>("manifest-v1.json");

export const manifestV2: OutputManifestV2 = {
  ...manifestV1,
  schema: "earthsciio/output-manifest/v2",
  fingerprint: `sha256:${"0f".repeat(32)}`,
  time_mode: "indexed",
  n_writers: 2,
  region_dims: ["lat"],
  commit_seq: 3,
  statics: [{ name: "orog", dims: ["lat", "lon"], dtype: "float64" }],
  statics_committed: ["orog"],
  records: {
    entries: [
      { committed: true, t: 0, generation: 1 },
      { committed: true, t: 3600, generation: 2 },
      { committed: false, t: 7200, generation: 0 },
      { committed: true, t: 10800, generation: 1 },
    ],
  },
  blobs: [
    { scope: "record", record: 1, writer: 0, key: "rng" },
    { scope: "record", record: 1, writer: 1, key: "rng" },
    { scope: "static", writer: 0, key: "a" },
  ],
};

const NAMES = ["a", "b", "λ", "température", "🌍", "x_1", "～"];
const DTYPES: StreamDType[] = ["float64", "float32", "int32", "int64", "uint8"];

/** Random valid stream schemas: a time dim plus 0–3 others, vars and statics over them. */
/** An array's zarr.json as zarr-python 3 writes it (sharded, Blosc zstd inside, CRC-32C index). */
export const zarrArray: ZarrArrayMetadata = {
  zarr_format: 3,
  node_type: "array",
  shape: [10, 4],
  data_type: "float32",
  chunk_grid: { name: "regular", configuration: { chunk_shape: [4, 4] } },
  chunk_key_encoding: { name: "default", configuration: { separator: "/" } },
  fill_value: 0.0,
  codecs: [
    {
      name: "sharding_indexed",
      configuration: {
        chunk_shape: [2, 2],
        codecs: [
          { name: "bytes", configuration: { endian: "little" } },
          { name: "gzip", configuration: { level: 5 } },
        ],
        index_codecs: [{ name: "bytes", configuration: { endian: "little" } }, { name: "crc32c" }],
        index_location: "end",
      },
    },
  ],
  attributes: {},
  dimension_names: ["time", null],
  storage_transformers: [],
};

export const streamSchemaArb: fc.Arbitrary<StreamSchema> = fc
  .record({
    names: fc.shuffledSubarray(NAMES, { minLength: 1, maxLength: 4 }),
    lengths: fc.array(fc.nat(20), { minLength: 4, maxLength: 4 }),
    chunks: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 4, maxLength: 4 }),
    factors: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 4, maxLength: 4 }),
    timeAt: fc.nat(3),
    vars: fc.array(
      fc.tuple(fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }), fc.constantFrom(...DTYPES)),
      {
        maxLength: 3,
      },
    ),
    statics: fc.array(
      fc.tuple(fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }), fc.constantFrom(...DTYPES)),
      {
        maxLength: 2,
      },
    ),
    indexed: fc.option(fc.uniqueArray(fc.double({ noNaN: true, noDefaultInfinity: true }), { maxLength: 6 })),
    profile: fc.constantFrom("diagnostic" as const, "checkpoint" as const, "wasm" as const),
  })
  .map((g) => {
    const names = g.names;
    const time = names[g.timeAt % names.length]!;
    const others = names.filter((n) => n !== time);
    const chunk_shape: Record<string, number> = {};
    const shard_shape: Record<string, number> = {};
    names.forEach((n, k) => {
      chunk_shape[n] = g.chunks[k]!;
      shard_shape[n] = g.chunks[k]! * g.factors[k]!;
    });
    const pick = (mask: boolean[]) => others.filter((_, k) => mask[k]);
    const times = g.indexed?.filter((t) => !Object.is(t, -0)).sort((a, b) => a - b);
    return {
      dims: names.map((n, k): [string, number] => [n, n === time ? 0 : g.lengths[k]!]),
      time_dim: time,
      time_mode: times === undefined ? "append" : { indexed: { times } },
      vars: g.vars.map(([mask, dtype], i) => ({ name: `v${i}`, dims: [time, ...pick(mask)], dtype })),
      statics: g.statics.map(([mask, dtype], i) => ({ name: `s${i}`, dims: pick(mask), dtype })),
      chunk_shape,
      shard_shape,
      profile: g.profile,
    } satisfies StreamSchema;
  });

/** A v2 manifest as an owner would write it for `s` right after create (nothing committed yet). */
export function manifestFor(s: StreamSchema): OutputManifestV2 {
  const times = s.time_mode === "append" ? undefined : s.time_mode.indexed.times;
  const nRecords = times?.length ?? 0;
  const manifest: OutputManifestV2 = {
    schema: "earthsciio/output-manifest/v2",
    base_url: "memory://x",
    format: "zarr",
    zarr_format: 3,
    profile: s.profile,
    codec: { id: "zstd", level: 5, checksum: false },
    time_dim: s.time_dim,
    dims: s.dims.map(([name, length]) => ({ name, length: name === s.time_dim ? nRecords : length })),
    vars: s.vars,
    chunk_shape: s.chunk_shape,
    shard_shape: s.shard_shape,
    time_shards: [],
    last_t: null,
    n_records: nRecords,
    created_at: "2026-12-02T15:00:00Z",
    fingerprint: schemaFingerprint(s),
    time_mode: times === undefined ? "append" : "indexed",
    n_writers: 1,
    region_dims: [],
    commit_seq: 0,
    statics: s.statics,
    statics_committed: [],
    blobs: [],
  };
  if (times !== undefined)
    manifest.records = { entries: times.map((t) => ({ committed: false, t, generation: 0 })) };
  return manifest;
}
