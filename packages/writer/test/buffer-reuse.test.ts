import assert from "node:assert/strict";
import { test } from "node:test";
import { readArrayLayout } from "@zarr-stream/reader";
import { decodeShard } from "@zarr-stream/shard";
import { MemoryStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";
import { gridSchema, recordArrays } from "./helpers.js";

// Time-shard buffers are reused without clearing (for a full append, clearing is pure overhead). A time shard that is flushed before it is full must still carry fill
// in its unwritten positions, not the previous time shard's values: they are inside an encoded chunk
// whenever a chunk spans several time steps, so they are bytes of the store.
test("§5.4 a reused time-shard buffer encodes fill, not the previous time shard, where no record was put", async () => {
  const schema = gridSchema({
    chunk_shape: { time: 2, lat: 1, lon: 3 },
    shard_shape: { time: 4, lat: 2, lon: 6 },
  });
  const store = new MemoryStore();
  const w = await ZarrStreamWriter.create(store, schema, { kind: "single" });
  for (let r = 0; r < 5; r++) {
    await w.writeRecord(10 * r, recordArrays(schema, r, {}));
    if (r === 3) await w.flush(); // time shard 0 full: written, its buffers become the spares
  }
  await w.flush(); // time shard 1 holds record 4 only; position 1 shares record 4's chunk
  await w.close();

  const layout = await readArrayLayout(store, "temperature");
  const key = "temperature/c/1/0/0";
  const shard = (await decodeShard(layout, (await store.get(key))!, key)) as Float64Array;
  const perStep = 2 * 6;
  const step = (p: number) => [...shard.subarray(p * perStep, (p + 1) * perStep)];
  // Shard (lat 0) holds the first two lat rows of the record: its first 12 values.
  assert.deepEqual(step(0), [...recordArrays(schema, 4, {}).temperature!.subarray(0, perStep)], "record 4");
  assert.ok(
    step(0).some((v) => v !== 0),
    "the generator gives non-zero values",
  );
  for (const p of [1, 2, 3]) assert.deepEqual(step(p), new Array(perStep).fill(0), `position ${p} is fill`);
});
