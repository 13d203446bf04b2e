import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SchemaError } from "@zarr-stream/spec";
import { type RunOptions, StreamRun } from "../src/index.js";
import { gridSchema, newStore } from "./helpers.js";
import { observedStore } from "./observed-store.js";

describe("StreamRun.open: a missing or malformed option is a SchemaError with its pointer, before any I/O", () => {
  const schema = gridSchema();
  // Every case would otherwise reach the store (id 0 of 1 with a schema opens and creates it).
  const good = () => ({ id: 0, count: 1, schema, env: {}, region: { lat: [0, 2] as [number, number] } });
  const cases: [string, unknown, string][] = [
    ["no options at all", undefined, ""],
    ["options that are not an object", "s3://bucket/run", ""],
    ["store missing", { ...good(), store: undefined }, "/store"],
    ["store null", { ...good(), store: null }, "/store"],
    ["store an empty URL", { ...good(), store: " " }, "/store"],
    ["store a number", { ...good(), store: 42 }, "/store"],
    ["store an object that is no Store", { ...good(), store: { url: "x", get: () => undefined } }, "/store"],
    ["id a string", { ...good(), id: "0" }, "/id"],
    ["id negative", { ...good(), id: -1 }, "/id"],
    ["count zero", { ...good(), count: 0 }, "/count"],
    ["env not an object", { ...good(), env: "OMPI_COMM_WORLD_RANK=0" }, "/env"],
    ["env value not a string", { ...good(), env: { PMI_RANK: 0 } }, "/env/PMI_RANK"],
    ["region an array", { ...good(), region: [0, 2] }, "/region"],
    ["region pair of three", { ...good(), region: { lat: [0, 2, 4] } }, "/region/lat"],
    ["region bound fractional", { ...good(), region: { lat: [0, 1.5] } }, "/region/lat"],
    ["region dim with a slash", { ...good(), region: { "a/b": "0-2" } }, "/region/a~1b"],
    ["schema a string", { ...good(), schema: "schema.json" }, "/schema"],
    ["owner without schema", { ...good(), schema: undefined }, "/schema"],
    ["commitEvery negative", { ...good(), commitEvery: -1 }, "/commitEvery"],
    ["timeoutMs a string", { ...good(), timeoutMs: "5000" }, "/timeoutMs"],
    ["pollMs fractional", { ...good(), pollMs: 0.5 }, "/pollMs"],
    ["reportEveryMs NaN", { ...good(), reportEveryMs: Number.NaN }, "/reportEveryMs"],
    ["onEvent not a function", { ...good(), onEvent: "log" }, "/onEvent"],
    ["writerOptions not an object", { ...good(), writerOptions: 3 }, "/writerOptions"],
  ];
  for (const [name, options, pointer] of cases) {
    it(`run options: ${name} -> SchemaError at "${pointer}"`, async () => {
      let touched = 0;
      const store = observedStore(newStore(), {
        read: () => {
          touched++;
        },
        write: () => {
          touched++;
        },
      });
      // Cases that name no store of their own get a counting one, so "before any I/O" is checked too.
      const given =
        typeof options === "object" && options !== null && !("store" in options)
          ? { ...options, store }
          : options;
      await assert.rejects(StreamRun.open(given as RunOptions), (e: unknown) => {
        assert.ok(e instanceof SchemaError, `${name}: ${String(e)}`);
        assert.equal(e.pointer, pointer, e.message);
        return true;
      });
      assert.equal(touched, 0, "no store call before the options are checked");
    });
  }
});
