import assert from "node:assert/strict";
import { test } from "node:test";
import { pythonFloatRepr as pyFloatRepr } from "@zarr-stream/spec";
import fc from "fast-check";
import { resolvedIndexIdentityHash, slotIndexIdentityHash } from "../src/index.js";
import { canonicalJson, envelopeJson, pyDumps, TIMESTAMP_KEYS } from "../src/pyjson.js";

const INTEGER_INDEX = {
  groups: { data: { kind: "integer", params: {}, size: 12 } },
  name: "integer_only_v1",
  schema_version: "v1",
};
const ITEMS = [
  { identity_hash: "bbb", coordinate_value: 1, source_ref: "/x/b", source_ref_kind: "path" },
  { identity_hash: "aaa", coordinate_value: 0, source_ref: "/x/a", source_ref_kind: "path" },
];

test("golden: integer-only resolved index identity hash", () => {
  assert.equal(
    resolvedIndexIdentityHash(INTEGER_INDEX),
    "ac6579db66b817cf4c5e35fe54745d57dcf27a70070d4eca8c7da4d078360a1c",
  );
});

test("golden: regular_time resolved index identity hash (key order of the input does not matter)", () => {
  const index = {
    schema_version: "v1",
    name: "opera_v1_resolved",
    groups: {
      data: {
        size: 288,
        kind: "regular_time",
        params: { mode: "exact", epoch: "2026-01-01T00:00:00Z", cadence_s: 300 },
      },
    },
  };
  assert.equal(
    resolvedIndexIdentityHash(index),
    "8fb909e5e1f6661829398471fd8d425c4a0acf333c9373544a19ca70ad6d5bed",
  );
});

test("golden: identity hash with items, invariant under item order, changes when an item is removed", () => {
  const want = "55ff629b0ba801584db2e847dca62e39f0a5a4c6e675495adbeaa3445cafed7a";
  assert.equal(resolvedIndexIdentityHash(INTEGER_INDEX, ITEMS), want);
  assert.equal(resolvedIndexIdentityHash(INTEGER_INDEX, [...ITEMS].reverse()), want);
  assert.notEqual(resolvedIndexIdentityHash(INTEGER_INDEX, ITEMS.slice(1)), want);
  assert.notEqual(resolvedIndexIdentityHash(INTEGER_INDEX, []), resolvedIndexIdentityHash(INTEGER_INDEX));
});

test("golden: slot-index model identity hash", () => {
  const model = {
    epoch: "2026-01-01T00:00:00Z",
    groups: { g1: { cadence_s: 300, mode: "exact" } },
    name: "opera_v1",
    schema_version: "v1",
    time_unit: null,
  };
  assert.equal(
    slotIndexIdentityHash(model),
    "bc441fbb3eb848c54db2c4673e75271d3b98dbb2b7b49081b521b7ef3923a894",
  );
  assert.notEqual(
    slotIndexIdentityHash({ ...model, groups: { g1: { cadence_s: 600, mode: "exact" } } }),
    slotIndexIdentityHash(model),
  );
});

test("JSON: Python float repr for timestamps, exponent switch at 1e16 and 1e-4", () => {
  assert.equal(pyFloatRepr(1724000000), "1724000000.0");
  assert.equal(pyFloatRepr(1724000000.25), "1724000000.25");
  assert.equal(pyFloatRepr(1e16), "1e+16");
  assert.equal(pyFloatRepr(1e15), "1000000000000000.0");
  assert.equal(pyFloatRepr(0.0001), "0.0001");
  assert.equal(pyFloatRepr(0.00001), "1e-05");
  assert.equal(pyFloatRepr(-2.5e-7), "-2.5e-07");
  assert.equal(pyFloatRepr(1.5e300), "1.5e+300");
  assert.equal(pyFloatRepr(-0), "-0.0");
});

test("JSON: envelope style is compact, insertion-ordered, ASCII-escaped with float timestamps", () => {
  const text = envelopeJson({
    z: 1,
    timestamp: 1724000000,
    name: "é😀\u007f",
    n: 3,
    nested: { updated_at: 5 },
  });
  assert.equal(
    text,
    '{"z":1,"timestamp":1724000000.0,"name":"\\u00e9\\ud83d\\ude00\\u007f","n":3,"nested":{"updated_at":5.0}}',
  );
});

test("JSON: canonical style is sorted by code point, compact, raw UTF-8", () => {
  assert.equal(
    canonicalJson({ b: "é", a: [1, 2.5], "\u{1F600}": 1, "\uFFFF": 2 }),
    '{"a":[1,2.5],"b":"é","\uFFFF":2,"\u{1F600}":1}',
  );
  assert.equal(
    pyDumps(
      { a: 1, created_at: 2 },
      { ensureAscii: true, sortKeys: false, spaced: true, floatKeys: TIMESTAMP_KEYS },
    ),
    '{"a": 1, "created_at": 2.0}',
  );
});

test("JSON: every finite double survives the float repr round trip (property)", () => {
  fc.assert(
    fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (x) => {
      const text = pyFloatRepr(x);
      assert.equal(Number(text), x, text);
    }),
    { numRuns: 2000 },
  );
});
