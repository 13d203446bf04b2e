import assert from "node:assert/strict";
import { test } from "node:test";
import { findPython, runPython } from "@zarr-stream/test-support/python";
import fc from "fast-check";
import { pythonFloatRepr } from "../src/float.js";
import { canonicalJson, canonicalJsonUtf8, formatFloat, SchemaError } from "../src/index.js";

// Python reads one JSON value per line and prints the canonical text of each, one per line (ASCII-safe
// framing for the ensure_ascii=False form by re-encoding each output line as a JSON string).
const PY_CANON = `
import json, sys
for line in sys.stdin:
    v = json.loads(line)
    print(json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=True))
`;
const PY_CANON_UTF8 = `
import json, sys
for line in sys.stdin:
    v = json.loads(line)
    s = json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    print(json.dumps(s))
`;

/** One line per value; JSON.stringify escapes lone surrogates, so Python sees exactly the JS strings. */
function batch(values: unknown[]): string {
  return values.map((v) => JSON.stringify(v)).join("\n") + "\n";
}

const python = findPython();
const { skip } = python;

test("§3.1 canonical_json sorts keys, is compact and escapes non-ASCII like Python", () => {
  assert.equal(canonicalJson({ b: 1, a: [true, null, "x"] }), '{"a":[true,null,"x"],"b":1}');
  assert.equal(canonicalJson('λ\u007f\n"\\'), '"\\u03bb\\u007f\\n\\"\\\\"');
  assert.equal(canonicalJson("😀"), '"\\ud83d\\ude00"');
});

test("§3.1 canonical_json orders keys by code point, not UTF-16 unit", () => {
  // U+FF5E (BMP, above the surrogates) sorts before U+1F600 in Python; JS's default sort puts it after.
  assert.equal(canonicalJson({ "😀": 1, "～": 2 }), '{"\\uff5e":2,"\\ud83d\\ude00":1}');
});

test("§3.1 canonical_json refuses floats, NaN, non-safe integers and non-JSON values", () => {
  for (const bad of [
    { a: 1.5 },
    [Number.NaN],
    { x: { y: Number.POSITIVE_INFINITY } },
    2 ** 60,
    undefined,
    () => 1,
  ]) {
    assert.throws(() => canonicalJson(bad), SchemaError);
  }
  assert.throws(
    () => canonicalJson({ a: [0, 0.25] }),
    (e: SchemaError) => e.pointer === "/a/1",
  );
});

test("canonical JSON errors name RFC 6901 pointers: escaped keys, '/' for the root, a key's parent", () => {
  const at = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      assert.ok(e instanceof SchemaError);
      assert.ok(e.message.includes(`: ${e.pointer}: `), e.message);
      return e.pointer;
    }
    assert.fail("expected a SchemaError");
  };
  assert.equal(
    at(() => canonicalJson({ "a/b": { "c~d": [1, 0.5] } })),
    "/a~1b/c~0d/1",
  );
  assert.equal(
    at(() => canonicalJsonUtf8(Number.NaN)),
    "/",
  );
  assert.equal(
    at(() => canonicalJsonUtf8({ k: [{ s: "\uD800" }] })),
    "/k/0/s",
  );
  assert.equal(
    at(() => canonicalJsonUtf8({ k: { "\uDC00": 1 } })),
    "/k",
  );
  assert.equal(
    at(() => canonicalJsonUtf8({ big: [2 ** 60] })),
    "/big/0",
  );
});

test("§3.1 canonical_json equals Python json.dumps for ≥300 random float-free values", { skip }, () => {
  const key = fc.string({ unit: "grapheme", maxLength: 6 });
  const arb = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      fc.constant(null),
      fc.boolean(),
      fc.maxSafeInteger(),
      fc.string({ unit: "binary", maxLength: 12 }),
      fc.array(tie("value"), { maxLength: 4 }),
      fc.dictionary(key, tie("value"), { maxKeys: 5 }),
    ),
  })).value;
  const samples = fc.sample(arb, { numRuns: 400, seed: 20261202 });
  const expected = runPython(python.require(), PY_CANON, batch(samples)).split("\n").slice(0, -1);
  assert.equal(expected.length, samples.length);
  for (const [i, v] of samples.entries())
    assert.equal(canonicalJson(v), expected[i], `sample ${i}: ${JSON.stringify(v)}`);
});

test(
  "control-plane canonical form equals Python ensure_ascii=False for random values with floats",
  { skip },
  () => {
    const arb = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: "small" },
        fc.constant(null),
        fc.boolean(),
        fc.maxSafeInteger(),
        fc.double({ noNaN: true, noDefaultInfinity: true }).filter((x) => !Number.isInteger(x)),
        fc.string({ unit: "grapheme", maxLength: 8 }),
        fc.array(tie("value"), { maxLength: 4 }),
        fc.dictionary(fc.string({ unit: "grapheme", maxLength: 4 }), tie("value"), { maxKeys: 4 }),
      ),
    })).value;
    const samples = fc.sample(arb, { numRuns: 300, seed: 7 });
    const expected = runPython(python.require(), PY_CANON_UTF8, batch(samples))
      .split("\n")
      .slice(0, -1)
      .map((l) => JSON.parse(l) as string);
    for (const [i, v] of samples.entries()) assert.equal(canonicalJsonUtf8(v), expected[i], `sample ${i}`);
    assert.throws(() => canonicalJsonUtf8({ a: "\ud800" }), SchemaError);
  },
);

test(
  "Python float repr is matched for non-integral doubles (exponent switch at 1e-4 and 1e16)",
  { skip },
  () => {
    const fixed = [
      0.1, -2.5, 1e-5, 0.0001, 1.5e16, 1234567890123456.8, 5e-324, 1.7976931348623157e308, -1e-7,
    ];
    const random = fc.sample(
      fc.double({ noNaN: true, noDefaultInfinity: true }).filter((x) => !Number.isInteger(x)),
      {
        numRuns: 500,
        seed: 3,
      },
    );
    const xs = [...fixed, ...random];
    const expected = runPython(
      python.require(),
      "import sys,struct\nfor l in sys.stdin: print(repr(struct.unpack('<d', bytes.fromhex(l.strip()))[0]))",
      xs.map((x) => Buffer.from(new Float64Array([x]).buffer).toString("hex")).join("\n") + "\n",
    )
      .split("\n")
      .slice(0, -1);
    for (const [i, x] of xs.entries()) assert.equal(pythonFloatRepr(x), expected[i], `x = ${x}`);
  },
);

test("§5.2 formatFloat round-trips bitwise and refuses -0, NaN and ±Infinity", () => {
  fc.assert(
    fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (x) => {
      fc.pre(!Object.is(x, -0));
      const back = JSON.parse(formatFloat(x)) as number;
      assert.ok(Object.is(back, x));
    }),
    { numRuns: 2000 },
  );
  for (const bad of [-0, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
    assert.throws(() => formatFloat(bad), SchemaError);
  }
});
