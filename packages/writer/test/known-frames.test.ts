import assert from "node:assert/strict";
import { test } from "node:test";
import type { StreamSchema } from "@zarr-stream/spec";
import { MemoryStore } from "@zarr-stream/store";
import fc from "fast-check";
import { ZarrStreamWriter } from "../src/index.js";
import { committedDump, gridSchema, recordArrays } from "./helpers.js";
import { writeGate } from "./write-gate.js";

// A time shard flushed before it is full keeps its chunks' frames, and later writes of it encode only
// the chunks changed since (encodeShardChunksKnown). These check that what it writes is what a writer
// that flushed only at the end writes, byte for byte, whatever the flushes, chunk shapes and time shards.

/** The shard objects of a store (every chunk key), as hex. */
async function shardObjects(store: MemoryStore): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const key of await store.list("")) {
    if (!key.includes("/c/")) continue;
    out.set(key, Buffer.from((await store.get(key))!).toString("hex"));
  }
  return out;
}

const shapes = fc.constantFrom(
  { chunk_shape: { time: 1, lat: 1, lon: 3 }, shard_shape: { time: 3, lat: 2, lon: 6 } },
  { chunk_shape: { time: 1, lat: 2, lon: 2 }, shard_shape: { time: 4, lat: 4, lon: 4 } },
  // A chunk spans two records: a record put into it changes a chunk an earlier flush already encoded.
  { chunk_shape: { time: 2, lat: 1, lon: 3 }, shard_shape: { time: 4, lat: 2, lon: 6 } },
);

/**
 * Writes `schema` into two fresh stores through `writeAll` (its records; close follows): once flushing
 * after the k-th write where `flushAfter(k)`, once only at close. Both must hold the same shard objects,
 * byte for byte, and commit the same records.
 */
async function assertFlushesChangeNothing(
  schema: StreamSchema,
  flushAfter: (k: number) => boolean,
  writeAll: (w: ZarrStreamWriter, flushAfter: (k: number) => boolean) => Promise<void>,
): Promise<void> {
  const write = async (flushes: (k: number) => boolean) => {
    const store = new MemoryStore();
    const w = await ZarrStreamWriter.create(store, schema, { kind: "single" });
    await writeAll(w, flushes);
    await w.close();
    return store;
  };
  const often = await write(flushAfter);
  const once = await write(() => false);
  assert.deepEqual(await shardObjects(often), await shardObjects(once));
  assert.equal(await committedDump(often), await committedDump(once));
}

test("§5.4 a time shard flushed as it fills writes the bytes of one flushed once (append)", async () => {
  await fc.assert(
    fc.asyncProperty(
      shapes,
      fc.array(fc.boolean(), { minLength: 1, maxLength: 11 }),
      async (shape, flushes) => {
        const schema = gridSchema(shape);
        await assertFlushesChangeNothing(
          schema,
          (r) => flushes[r]!,
          async (w, flushAfter) => {
            for (let r = 0; r < flushes.length; r++) {
              await w.writeRecord(10 * r, recordArrays(schema, r, {}));
              if (flushAfter(r)) await w.flush();
            }
          },
        );
      },
    ),
    { numRuns: 40 },
  );
});

test("§6.2 indexed records put in any order and flushed as they come write the bytes of one flush", async () => {
  const times = [0, 60, 120, 180, 240, 300, 360, 420];
  await fc.assert(
    fc.asyncProperty(
      shapes,
      fc.shuffledSubarray([0, 1, 2, 3, 4, 5, 6, 7], { minLength: 1 }),
      fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
      async (shape, order, flushes) => {
        const schema = gridSchema({ ...shape, time_mode: { indexed: { times } } });
        await assertFlushesChangeNothing(
          schema,
          (k) => flushes[k]!,
          async (w, flushAfter) => {
            for (let k = 0; k < order.length; k++) {
              const i = order[k]!;
              await w.writeRecordAt(i, times[i]!, recordArrays(schema, i, {}));
              if (flushAfter(k)) await w.flush();
            }
          },
        );
      },
    ),
    { numRuns: 40 },
  );
});

/** Records of 16 MB: their copies and encodes take long enough for calls made meanwhile to land in them. */
function bigRecordSchema(): StreamSchema {
  const lat = 1024;
  return gridSchema({
    dims: [
      ["time", 0],
      ["lat", lat],
      ["lon", 2048],
    ],
    vars: [{ name: "temperature", dims: ["time", "lat", "lon"], dtype: "float64" }],
    coords: { lat: { values: Array.from({ length: lat }, (_, i) => i) }, time: { attrs: { units: "s" } } },
    chunk_shape: { time: 1, lat: 256, lon: 512 },
    shard_shape: { time: 4, lat: 1024, lon: 2048 },
  });
}

test("§5.4 a flush issued while records are still being copied in writes them whole", async () => {
  const schema = bigRecordSchema();
  const write = async (together: boolean) => {
    const store = new MemoryStore();
    const w = await ZarrStreamWriter.create(store, schema, { kind: "single" });
    if (together) {
      // Not awaited one by one: the writer takes them in call order (the flush commits both records).
      await Promise.all([
        w.writeRecord(0, recordArrays(schema, 0, {})),
        w.writeRecord(10, recordArrays(schema, 1, {})),
        w.flush(),
      ]);
    } else {
      await w.writeRecord(0, recordArrays(schema, 0, {}));
      await w.writeRecord(10, recordArrays(schema, 1, {}));
      await w.flush();
    }
    const dump = await committedDump(store);
    await w.close();
    return dump;
  };
  assert.equal(await write(true), await write(false));
});

test("§5.2 a record put while its time shard's write is on the wire is in the next token and write", async () => {
  const schema = bigRecordSchema();
  const write = async (overlap: boolean) => {
    const gate = writeGate(new MemoryStore(), (key) => key.startsWith("temperature/c/"));
    const w = await ZarrStreamWriter.create(gate.store, schema, { kind: "single" });
    await w.writeRecord(0, recordArrays(schema, 0, {}));
    if (overlap) {
      // The flush's shard write is held at the store; record 1 lands in the buffers it was encoded from.
      gate.hold();
      const flushed = w.flush();
      await gate.reached;
      await w.writeRecord(10, recordArrays(schema, 1, {}));
      gate.release();
      await flushed;
    } else await w.flush();
    // What that flush committed holds exactly what was written: record 1 waits for the next one.
    const first = await committedDump(gate.store);
    if (!overlap) await w.writeRecord(10, recordArrays(schema, 1, {}));
    await w.flush();
    const second = await committedDump(gate.store);
    await w.close();
    return [first, second];
  };
  assert.deepEqual(await write(true), await write(false));
});
