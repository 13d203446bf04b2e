import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SchemaError, type StreamSchema, validateStreamSchema } from "../src/index.js";

function schemaWith(over: {
  dim?: string;
  variable?: string;
  staticName?: string;
  second?: string;
}): StreamSchema {
  const dim = over.dim ?? "lat";
  return {
    dims: [
      ["time", 0],
      [dim, 4],
    ],
    time_dim: "time",
    time_mode: "append",
    vars: [
      { name: over.variable ?? "temperature", dims: ["time", dim], dtype: "float64" },
      ...(over.second === undefined
        ? []
        : [{ name: over.second, dims: ["time", dim], dtype: "float64" as const }]),
    ],
    statics: over.staticName === undefined ? [] : [{ name: over.staticName, dims: [dim], dtype: "float32" }],
    chunk_shape: { time: 1, [dim]: 2 },
    shard_shape: { time: 2, [dim]: 4 },
    profile: "diagnostic",
  };
}

/** Names no backend may be handed as a key segment, with the words the refusal must use. */
const HOSTILE: [string, RegExp][] = [
  ["", /empty/],
  [".", /is "\."/],
  ["..", /is "\.\."/],
  ["a/b", /one path segment/],
  ["/abs", /one path segment/],
  ["a\\b", /backslash/],
  ["a\0b", /U\+0000/],
  ["tab\there", /U\+0009/],
  ["line\nbreak", /U\+000A/],
  ["bell\u0007", /U\+0007/],
  ["del\u007f", /U\+007F/],
  ["esc\u001b[31m", /U\+001B/],
  [".zs-tmp-x", /starts with "\."/],
  [".zarr-stream", /starts with "\."/],
  [".firecube", /starts with "\."/],
  [".hidden", /starts with "\."/],
  ["__meta", /Zarr v3 reserves/],
  ["trailing.", /space or a dot/],
  ["trailing ", /space or a dot/],
  ["CON", /device name/],
  ["nul", /device name/],
  ["com1", /device name/],
  ["LPT9.txt", /device name/],
  ["aux.zarr", /device name/],
  ["blobs", /layout itself uses/],
  ["Blobs", /layout itself uses/],
  ["zarr.json", /layout itself uses/],
  ["output_manifest.json", /layout itself uses/],
  ["_tokens", /layout itself uses/],
  ["x".repeat(256), /255 bytes/],
  ["é".repeat(128), /255 bytes/],
];

describe("node names: what every backend can hold as a key segment", () => {
  for (const [name, words] of HOSTILE) {
    for (const field of ["variable", "staticName", "dim"] as const) {
      it(`${JSON.stringify(name.length > 20 ? `${name.slice(0, 20)}…` : name)} as a ${field} is a SchemaError naming the field`, () => {
        assert.throws(
          () => validateStreamSchema(schemaWith({ [field]: name })),
          (e: unknown) => {
            assert.ok(e instanceof SchemaError, String(e));
            const pointer =
              field === "dim" ? "/dims/1/0" : field === "variable" ? "/vars/0/name" : "/statics/0/name";
            // A dim name the JSON Schema already refuses (empty) may fail at another pointer first.
            if (name !== "") assert.equal(e.pointer, pointer, e.message);
            // The JSON Schema's name pattern refuses some of them first, in its own words.
            if (name !== "" && !/must match pattern/.test(e.message)) assert.match(e.message, words);
            return true;
          },
        );
      });
    }
  }

  it("names that differ only by case are refused, naming the second", () => {
    assert.throws(
      () => validateStreamSchema(schemaWith({ variable: "Temp", second: "temp" })),
      (e: unknown) =>
        e instanceof SchemaError && e.pointer === "/vars/1/name" && /only by case/.test(e.message),
    );
  });

  it("ordinary names, Unicode and 255-byte names included, validate", () => {
    for (const name of [
      "t2m",
      "T",
      "sea-level_pressure.mean",
      "température",
      "x".repeat(255),
      "a.b.c",
      "_private",
    ]) {
      assert.doesNotThrow(() => validateStreamSchema(schemaWith({ variable: name })), name);
    }
  });
});
