import assert from "node:assert/strict";
import { test } from "node:test";
import { defineSchema, SchemaError, type StreamSchema } from "../src/index.js";

test("defineSchema: a literal typed as a StreamSchema (dims as [string, number][]), returned as it is", () => {
  const literal: StreamSchema = {
    dims: [
      ["time", 0],
      ["lat", 4],
    ],
    time_dim: "time",
    time_mode: "append",
    vars: [{ name: "t2m", dims: ["time", "lat"], dtype: "float32" }],
    statics: [],
    chunk_shape: { time: 1, lat: 2 },
    shard_shape: { time: 2, lat: 4 },
    profile: "wasm",
  };
  assert.equal(defineSchema(literal), literal);

  // Compile-time: written inline, the literal keeps the types a StreamSchema needs, with no annotation.
  const schema = defineSchema({
    dims: [
      ["time", 0],
      ["lat", 4],
    ],
    time_dim: "time",
    time_mode: "append",
    vars: [{ name: "t2m", dims: ["time", "lat"], dtype: "float32" }],
    statics: [],
    chunk_shape: { time: 1, lat: 2 },
    shard_shape: { time: 2, lat: 4 },
    profile: "wasm",
  });
  const dims: [string, number][] = schema.dims;
  const mode: "append" = schema.time_mode;
  assert.deepEqual([dims, mode], [literal.dims, "append"]);
  // @ts-expect-error a profile the contract does not name is refused where the schema is written
  assert.throws(() => defineSchema({ ...schema, profile: "fast" }), SchemaError);
});

test("defineSchema: the checks of validateStreamSchema throw where the schema is defined", () => {
  const schema: StreamSchema = {
    dims: [
      ["time", 0],
      ["lat", 4],
    ],
    time_dim: "time",
    time_mode: "append",
    vars: [{ name: "t2m", dims: ["time", "lat"], dtype: "float32" }],
    statics: [],
    chunk_shape: { time: 1, lat: 3 },
    shard_shape: { time: 2, lat: 4 },
    profile: "wasm",
  };
  assert.throws(
    () => defineSchema(schema),
    (e: unknown) => e instanceof SchemaError && /chunk/.test(e.message),
  );
});
