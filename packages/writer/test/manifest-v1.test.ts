import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fillGenerated, type StreamSchema } from "@zarr-stream/spec";
import { MemoryStore } from "@zarr-stream/store";
import { fixture, fixtureText } from "@zarr-stream/test-support/fixtures";
import { ZarrStreamWriter } from "../src/index.js";

/** EarthSciIO's own v1 write-conformance case (reference facts): time x lat 3 x lon 4, two float64 vars. */
const V1_CASE = fixture<StreamSchema>("v1-case-schema.json");

/**
 * The manifest the Julia/Rust v1 writers produce for that case, in their spelling: serde_json pretty
 * printing (2-space indent, insertion order, floats with a fraction, no final newline).
 */
const EXPECTED = fixtureText("manifest-v1.json");

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
