import assert from "node:assert/strict";
import { test } from "node:test";
import { findPython, runPython } from "@zarr-stream/test-support/python";
import { fingerprintDocument, type StreamSchema, schemaFingerprint } from "../src/index.js";

const python = findPython();
const { skip } = python;

/** Python computes the fingerprint of each F (one JSON per line) independently of our canonicalJson. */
const PY_FINGERPRINT = `
import hashlib, json, sys
for line in sys.stdin:
    f = json.loads(line)
    c = json.dumps(f, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    print("sha256:" + hashlib.sha256(c.encode("ascii")).hexdigest())
`;

const unicode: StreamSchema = {
  dims: [
    ["temps", 999],
    ["λ", 6],
    ["température", 4],
    ["🌍", 2],
  ],
  time_dim: "temps",
  time_mode: "append",
  vars: [
    { name: "température_2m", dims: ["temps", "λ", "température"], dtype: "float64" },
    { name: "🌧", dims: ["temps", "🌍"], dtype: "uint8", attrs: { units: "mm" } },
  ],
  statics: [],
  chunk_shape: { temps: 1, λ: 3, température: 2, "🌍": 1 },
  shard_shape: { temps: 2, λ: 6, température: 4, "🌍": 2 },
  profile: "diagnostic",
  coords: { λ: { values: [0, 1, 2, 3, 4, 5] } },
};

const indexed: StreamSchema = {
  dims: [
    ["time", 0],
    ["lat", 4],
    ["lon", 8],
  ],
  time_dim: "time",
  time_mode: { indexed: { times: [0, 3600.5, 7200, 1e9 + 0.25] } },
  vars: [{ name: "T", dims: ["time", "lat", "lon"], dtype: "float32" }],
  statics: [],
  chunk_shape: { time: 1, lat: 2, lon: 4 },
  shard_shape: { time: 2, lat: 4, lon: 8 },
  profile: "wasm",
};

const withStatics: StreamSchema = {
  dims: [
    ["time", 0],
    ["lat", 4],
    ["lon", 8],
  ],
  time_dim: "time",
  time_mode: "append",
  vars: [
    { name: "u", dims: ["lat", "time", "lon"], dtype: "int64" },
    { name: "v", dims: ["time"], dtype: "int32" },
  ],
  statics: [
    { name: "orog", dims: ["lat", "lon"], dtype: "float64" },
    { name: "dJ_du0", dims: ["lon"], dtype: "float32" },
  ],
  chunk_shape: { time: 4, lat: 1, lon: 8 },
  shard_shape: { time: 8, lat: 2, lon: 8 },
  profile: "checkpoint",
};

test("§3.1 F has the time dim's length 0 in append mode and n_records in indexed mode", () => {
  assert.deepEqual(fingerprintDocument(unicode).dims[0], ["temps", 0]);
  assert.deepEqual(fingerprintDocument(indexed).dims[0], ["time", 4]);
  assert.equal(fingerprintDocument(indexed).time_mode, "indexed");
  assert.deepEqual(fingerprintDocument(withStatics).statics, [
    ["orog", ["lat", "lon"], "float64"],
    ["dJ_du0", ["lon"], "float32"],
  ]);
  // coords, attrs and times are not in F
  assert.deepEqual(Object.keys(fingerprintDocument(indexed)).sort(), [
    "chunk_shape",
    "dims",
    "profile",
    "shard_shape",
    "statics",
    "time_dim",
    "time_mode",
    "vars",
  ]);
});

test(
  "§3.1 fingerprint equals Python hashlib over json.dumps(F) (non-ASCII names, indexed, statics)",
  { skip },
  () => {
    const schemas = [unicode, indexed, withStatics];
    const expected = runPython(
      python.require(),
      PY_FINGERPRINT,
      schemas.map((s) => JSON.stringify(fingerprintDocument(s))).join("\n"),
    )
      .trim()
      .split("\n");
    assert.deepEqual(schemas.map(schemaFingerprint), expected);
    assert.match(expected[0]!, /^sha256:[0-9a-f]{64}$/);
    assert.equal(new Set(expected).size, 3);
  },
);

test("§3.1 fingerprint ignores coords, attrs and indexed times but not the record count", () => {
  const moreTimes: StreamSchema = { ...indexed, time_mode: { indexed: { times: [0, 1, 2, 3] } } };
  assert.equal(schemaFingerprint(moreTimes), schemaFingerprint(indexed));
  const fewer: StreamSchema = { ...indexed, time_mode: { indexed: { times: [0, 1, 2] } } };
  assert.notEqual(schemaFingerprint(fewer), schemaFingerprint(indexed));
  const { coords: _coords, ...noCoords } = unicode;
  assert.equal(schemaFingerprint({ ...noCoords, attrs: { title: "x" } }), schemaFingerprint(unicode));
  const reordered: StreamSchema = { ...withStatics, statics: [...withStatics.statics].reverse() };
  assert.notEqual(schemaFingerprint(reordered), schemaFingerprint(withStatics));
});
