import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { findPython, runPython } from "@zarr-stream/test-support/python";
import fc from "fast-check";
import { parse } from "lossless-json";
import {
  canonicalJsonUtf8,
  IntegralFloat,
  parseJsonExact,
  SchemaError,
  stringifyJsonExact,
} from "../src/index.js";

const python = findPython();
const { skip } = python;

function sha256(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** Number tokens in the shapes Python and other writers emit: ints of any size, floats, integral floats. */
const numberToken = fc.oneof(
  fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }).map((n) => n.toString()),
  fc.maxSafeInteger().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => (Object.is(x, -0) ? "-0.0" : String(x))),
  fc.integer({ min: -1e6, max: 1e6 }).map((i) => `${i}.0`),
  fc
    .tuple(fc.integer({ min: -999, max: 999 }), fc.nat(9999), fc.integer({ min: -30, max: 30 }))
    .map(([i, f, e]) => `${i}.${f}e${e}`),
  fc.constantFrom("1.0", "0.5", "2.0", "1e3", "1E+2", "-0", "100.000", "1767225600000000000"),
);

/** JSON text built from tokens, so number spelling survives until Python reads it. */
const jsonText = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    numberToken,
    fc.constantFrom("null", "true", "false"),
    fc.string({ unit: "grapheme", maxLength: 6 }).map((s) => JSON.stringify(s)),
    fc.array(tie("value"), { maxLength: 4 }).map((xs) => `[${xs.join(",")}]`),
    fc
      .uniqueArray(fc.tuple(fc.string({ unit: "grapheme", maxLength: 4 }), tie("value")), {
        maxLength: 4,
        selector: ([k]) => k,
      })
      .map((kv) => `{${kv.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",")}}`),
  ),
})).value;

// Python reads each document, prints it in a style of its own choosing (json.dumps defaults, indented or
// ASCII-escaped) and hashes its canonical bytes; both come back as one JSON line per document.
const PY_PRINT_AND_HASH = `
import hashlib, json, sys
for i, line in enumerate(sys.stdin):
    v = json.loads(line)
    style = [dict(), dict(indent=2), dict(ensure_ascii=False, separators=(",", ":"))][i % 3]
    printed = json.dumps(v, **style)
    canon = json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    print(json.dumps([printed, hashlib.sha256(canon.encode("utf-8")).hexdigest()]))
`;

test(
  "documents printed by Python's json.dumps hash identically after parseJsonExact + canonicalJsonUtf8",
  { skip },
  () => {
    const samples = fc.sample(jsonText, { numRuns: 400, seed: 17 });
    const answers = runPython(python.require(), PY_PRINT_AND_HASH, `${samples.join("\n")}\n`)
      .split("\n")
      .slice(0, -1)
      .map((l) => JSON.parse(l) as [string, string]);
    assert.equal(answers.length, samples.length);
    for (const [i, [printed, pyHash]] of answers.entries()) {
      assert.equal(sha256(canonicalJsonUtf8(parseJsonExact(printed))), pyHash, `sample ${i}: ${printed}`);
    }
  },
);

test("floats, integral floats and integers beyond 2^53 keep their Python text", () => {
  const doc = parseJsonExact('{"v":[0.5,1.0,2.0,1e3,-0.0,-0,1767225600000000000]}');
  assert.equal(canonicalJsonUtf8(doc), '{"v":[0.5,1.0,2.0,1000.0,-0.0,0,1767225600000000000]}');
  const v = (doc as { v: unknown[] }).v;
  assert.ok(v[1] instanceof IntegralFloat);
  assert.equal(v[6], 1767225600000000000n);
  // JSON.parse loses both the float-ness of 1.0 and the digits of the big integer.
  assert.notEqual(canonicalJsonUtf8(JSON.parse('{"v":[1.0]}')), '{"v":[1.0]}');
});

test("malformed text and non-JSON numbers are SchemaErrors", () => {
  assert.throws(() => parseJsonExact("{", "index"), SchemaError);
  assert.throws(() => canonicalJsonUtf8(parseJsonExact("[1e400]")), SchemaError);
});

test("stringifyJsonExact prints what parseJsonExact read back to the same values, indented or not (property)", () => {
  fc.assert(
    fc.property(jsonText, fc.constantFrom(undefined, 2), (text, indent) => {
      const value = parseJsonExact(text);
      assert.deepEqual(parseJsonExact(stringifyJsonExact(value, indent)!), value);
    }),
    { numRuns: 1000 },
  );
  assert.equal(
    stringifyJsonExact({ a: 2n ** 63n - 1n, b: new IntegralFloat(-0), c: 0.5 }),
    '{"a":9223372036854775807,"b":-0.0,"c":0.5}',
  );
  assert.equal(stringifyJsonExact(undefined), undefined);
});

/** Python's json.loads number rule, written out again as the oracle: int text is an int, anything else a float. */
function pythonNumber(text: string): unknown {
  if (/^-?\d+$/.test(text)) {
    const n = BigInt(text);
    return n >= -(2n ** 53n - 1n) && n <= 2n ** 53n - 1n ? Number(n) : n;
  }
  const x = Number(text);
  return Number.isInteger(x) || !Number.isFinite(x) ? new IntegralFloat(x) : x;
}

test("parseJsonExact reads what lossless-json with Python's number rule reads, whether or not JSON.parse does the reading (property)", () => {
  fc.assert(
    fc.property(jsonText, (text) => {
      const oracle = parse(text, null, (t) => pythonNumber(t));
      assert.deepEqual(parseJsonExact(text), oracle);
    }),
    { numRuns: 3000 },
  );
  for (const text of ["[-0]", "[1.0]", "[1e400]", "[9007199254740993]", '["1.0",1.5,12]']) {
    assert.deepEqual(
      parseJsonExact(text),
      parse(text, null, (t) => pythonNumber(t)),
      text,
    );
  }
});
