// Failed store calls, late tokens and racing resumes on the commit path: each case once made a committed
// record read other bytes than were written, or left a manifest naming a page that is not there.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { readRecord } from "@zarr-stream/reader";
import type { StreamSchema } from "@zarr-stream/spec";
import { type FencingStore, MemoryStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "../src/index.js";
import { FaultStore, InjectedFault } from "./fault-store.js";
import { gridSchema, recordArrays } from "./helpers.js";
import { bits } from "./store-locations.js";

/** Record r of variable `name` as a reader sees it, and as it was written, over `region`. */
async function recordBits(store: FencingStore, schema: StreamSchema, name: string, r: number, region = {}) {
  const read = await readRecord(store, name, r, Object.keys(region).length > 0 ? region : undefined);
  const written = recordArrays(schema, r, region)[name]!;
  return { read: bits(read.data), written: bits(written) };
}

describe("indexed mode: a reload of a released time shard", () => {
  it("that fails is done again by the retried writeRecordAt, so the shard keeps its committed records", async () => {
    const times = [10, 20, 30, 40];
    const schema = gridSchema({ time_mode: { indexed: { times } } });
    const store = new FaultStore(new MemoryStore());
    const w = await ZarrStreamWriter.create(store, schema, { kind: "single" });
    await w.writeRecordAt(0, 10, recordArrays(schema, 0, {}));
    // The commit releases time shard 0 (records 0 and 1): the next write into it reloads it.
    await w.flush();
    // The reload's first read fails ...
    store.plan = { at: store.calls + 1, kind: "fail" };
    await assert.rejects(w.writeRecordAt(1, 20, recordArrays(schema, 1, {})), InjectedFault);
    // ... and the caller retries the same call.
    await w.writeRecordAt(1, 20, recordArrays(schema, 1, {}));
    await w.close();
    for (const r of [0, 1]) {
      for (const v of schema.vars) {
        const { read, written } = await recordBits(store.inner, schema, v.name, r);
        assert.equal(read, written, `record ${r} of ${v.name}`);
      }
    }
  });

  it("keeps a record the contributor tokened, though a re-read manifest does not commit it yet", async () => {
    const times = [10, 20, 30, 40, 50, 60, 70, 80];
    const schema = gridSchema({ time_mode: { indexed: { times } } });
    const store = new MemoryStore();
    const mine = { lat: [0, 2] as [number, number] };
    const theirs = { lat: [2, 4] as [number, number] };
    const owned = (name: string, partitioned: boolean) => partitioned || name !== "temperature";
    const contributed = (_: string, partitioned: boolean) => partitioned;
    const owner = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 2 }, mine);
    const c = await ZarrStreamWriter.join(store, { kind: "contributor", id: 1 }, theirs);
    // Record 6 is committed, then invalidated: the contributor's view still holds it committed.
    await owner.writeRecordAt(6, 70, recordArrays(schema, 6, mine, owned));
    await c.writeRecordAt(6, 70, recordArrays(schema, 6, theirs, contributed));
    await owner.commit([await owner.flush(), await c.flush()]);
    await owner.invalidate([6]);
    // The contributor writes record 0 and flushes; its token travels to the owner.
    await c.writeRecordAt(0, 10, recordArrays(schema, 0, theirs, contributed));
    const late = await c.flush();
    // Rewriting record 6 makes it re-read the manifest, which does not commit record 0 yet; then it
    // writes record 1, into record 0's time shard, and flushes again.
    await c.writeRecordAt(6, 70, recordArrays(schema, 6, theirs, contributed));
    await c.writeRecordAt(1, 20, recordArrays(schema, 1, theirs, contributed));
    const next = await c.flush();
    // The owner commits record 0 with the late token.
    await owner.writeRecordAt(0, 10, recordArrays(schema, 0, mine, owned));
    await owner.commit([await owner.flush(), late]);
    const { read, written } = await recordBits(store, schema, "temperature", 0, theirs);
    assert.equal(read, written, "record 0 as the contributor wrote it");
    await owner.writeRecordAt(1, 20, recordArrays(schema, 1, mine, owned));
    await owner.writeRecordAt(6, 70, recordArrays(schema, 6, mine, owned));
    await owner.commit([await owner.flush(), next]);
    for (const r of [0, 1, 6]) {
      const { read, written } = await recordBits(store, schema, "temperature", r, theirs);
      assert.equal(read, written, `record ${r}`);
    }
  });
});
