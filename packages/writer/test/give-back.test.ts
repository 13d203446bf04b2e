import assert from "node:assert/strict";
import { test } from "node:test";
import { ProtocolError } from "@zarr-stream/spec";
import { MemoryStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "../src/index.js";
import { committedDump, gridSchema, recordArrays } from "./helpers.js";

/**
 * A MemoryStore that keeps what the writer hands it for each shard of the variables: views of its own
 * output buffers (a store keeps no reference once put settles; this one does, to look at them later).
 */
function keepingStore(): { store: MemoryStore; handed: Uint8Array[]; keys: string[] } {
  const store = new MemoryStore();
  const handed: Uint8Array[] = [];
  const keys: string[] = [];
  const putIfVersion = store.putIfVersion.bind(store);
  store.putIfVersion = (key, bytes, expected) => {
    if (/^(temperature|zonal|total)\/c\//.test(key)) {
      handed.push(bytes);
      keys.push(key);
    }
    return putIfVersion(key, bytes, expected);
  };
  return { store, handed, keys };
}

const schema = gridSchema({
  shard_shape: { time: 4, lat: 2, lon: 6 },
  chunk_shape: { time: 1, lat: 2, lon: 3 },
});

test("close gives the writer's buffers back at once, after everything it committed landed", async () => {
  const { store, handed } = keepingStore();
  const w = await ZarrStreamWriter.create(store, schema, { kind: "single" });
  // Whole time shards, whose objects are all one size: every shard write reuses the output buffers the
  // first ones made, so every buffer handed to the store is one the writer still holds at close.
  for (let r = 0; r < 8; r++) await w.writeRecord(10 * r, recordArrays(schema, r, {}));
  // The same records committed inside time shards, its last one left open: the same committed data.
  const reference = new MemoryStore();
  const once = await ZarrStreamWriter.create(reference, schema, { kind: "single" });
  for (let r = 0; r < 8; r++) {
    await once.writeRecord(10 * r, recordArrays(schema, r, {}));
    if (r % 3 === 1) await once.flush();
  }
  await once.close();
  assert.ok(handed.length > 0);
  assert.ok(
    handed.every((b) => b.buffer.byteLength > 0),
    "the buffers are the writer's while it is open",
  );
  await w.close();
  assert.ok(
    handed.every((b) => b.buffer.byteLength === 0),
    "every output buffer is detached once close has returned",
  );
  assert.equal(await committedDump(store), await committedDump(reference));
});

test("a refused close gives nothing back: the handle goes on and closes later", async () => {
  const { store, handed, keys } = keepingStore();
  // What the contributor handed over (lat [2, 4) is shard row 1) among the first `n`: the owner's buffers
  // are the owner's.
  const contributors = (n: number) =>
    handed.slice(0, n).filter((_, i) => /^temperature\/c\/\d+\/1\//.test(keys[i]!));
  const owner = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 2 }, { lat: [0, 2] });
  const contributor = await ZarrStreamWriter.join(store, { kind: "contributor", id: 1 }, { lat: [2, 4] });
  for (let r = 0; r < 2; r++) {
    await owner.writeRecord(10 * r, recordArrays(schema, r, { lat: [0, 2] }));
    await contributor.writeRecord(
      10 * r,
      recordArrays(schema, r, { lat: [2, 4] }, (_, p) => p),
    );
  }
  await owner.commit([await owner.flush(), await contributor.flush()]);
  const kept = handed.length;
  assert.ok(contributors(kept).length > 0);
  await contributor.writeRecord(
    20,
    recordArrays(schema, 2, { lat: [2, 4] }, (_, p) => p),
  );
  await assert.rejects(contributor.close(), ProtocolError, "a contributor refuses to close unflushed");
  const token = await contributor.flush();
  assert.ok(
    contributors(kept).every((b) => b.buffer.byteLength > 0),
    "the refused close kept them",
  );
  await contributor.close();
  assert.ok(contributors(kept).every((b) => b.buffer.byteLength === 0));
  await owner.writeRecord(20, recordArrays(schema, 2, { lat: [0, 2] }));
  await owner.close([token]);
});
