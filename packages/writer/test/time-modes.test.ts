import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { readOutputManifest, readRecord } from "@zarr-stream/reader";
import {
  CommitError,
  NotCommitted,
  type OutputManifestV2,
  ProtocolError,
  SchemaError,
} from "@zarr-stream/spec";
import { ZarrStreamWriter } from "../src/index.js";
import {
  bytesOf,
  committedDump,
  gridSchema,
  newStore,
  ownerAndContributor,
  recordArrays,
} from "./helpers.js";

const TIMES = [0, 3600, 7200, 10800, 14400];
const indexedSchema = (split = false) => gridSchema({ time_mode: { indexed: { times: TIMES } } }, split);

describe("§6 time modes", () => {
  it("§6.1 append: index is the running count and t must strictly increase", async () => {
    const store = newStore();
    const schema = gridSchema();
    const w = await ZarrStreamWriter.create(store, schema, { kind: "single" });
    assert.equal(await w.writeRecord(10, recordArrays(schema, 0, {})), 0);
    assert.equal(await w.writeRecord(20, recordArrays(schema, 1, {})), 1);
    for (const bad of [20, 19, Number.NaN, Number.POSITIVE_INFINITY]) {
      await assert.rejects(w.writeRecord(bad, recordArrays(schema, 2, {})), SchemaError);
    }
    assert.equal(await w.writeRecord(30, recordArrays(schema, 2, {})), 2);
    await assert.rejects(w.writeRecordAt(3, 40, recordArrays(schema, 3, {})), ProtocolError);
  });

  it("§6.2 indexed: write_record is refused, t must equal times[i] bitwise, index in range", async () => {
    const store = newStore();
    const schema = indexedSchema();
    const w = await ZarrStreamWriter.create(store, schema, { kind: "single" });
    await assert.rejects(w.writeRecord(0, recordArrays(schema, 0, {})), ProtocolError);
    await assert.rejects(w.writeRecordAt(1, 3600.0000000000005, recordArrays(schema, 1, {})), SchemaError);
    await assert.rejects(w.writeRecordAt(5, 18000, recordArrays(schema, 5, {})), SchemaError);
    await assert.rejects(w.writeRecordAt(-1, 0, recordArrays(schema, 0, {})), SchemaError);
    await assert.rejects(w.writeRecordAt(0.5, 0, recordArrays(schema, 0, {})), SchemaError);
    await w.writeRecordAt(1, 3600, recordArrays(schema, 1, {}));
  });

  it("§10 indexed-reverse: descending write_record_at equals forward append", async () => {
    const fwd = newStore();
    const a = await ZarrStreamWriter.create(fwd, gridSchema(), { kind: "single" });
    for (let r = 0; r < TIMES.length; r++) await a.writeRecord(TIMES[r]!, recordArrays(gridSchema(), r, {}));
    await a.close();
    const rev = newStore();
    const schema = indexedSchema();
    const b = await ZarrStreamWriter.create(rev, schema, { kind: "single" });
    for (let r = TIMES.length - 1; r >= 0; r--) {
      await b.writeRecordAt(r, TIMES[r]!, recordArrays(schema, r, {}));
      if (r === 2) await b.flush(); // a partial time shard committed in the middle
    }
    await b.close();
    const m = (await readOutputManifest(rev)) as OutputManifestV2;
    assert.equal(m.time_mode, "indexed");
    assert.deepEqual(
      m.records!.entries.map((e) => [e.committed, e.t, e.generation]),
      TIMES.map((t) => [true, t, 1]),
    );
    assert.deepEqual(
      JSON.parse(await committedDump(rev)).slice(2),
      JSON.parse(await committedDump(fwd)).slice(2),
    );
  });

  it("§6.2 rewrite of a committed record is refused until invalidate; then generation 2", async () => {
    const store = newStore();
    const schema = indexedSchema();
    const w = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 1 });
    await w.writeRecordAt(3, TIMES[3]!, recordArrays(schema, 3, {}));
    await w.writeRecordAt(2, TIMES[2]!, recordArrays(schema, 2, {}));
    await w.commit([await w.flush()]);
    await assert.rejects(w.writeRecordAt(3, TIMES[3]!, recordArrays(schema, 7, {})), ProtocolError);
    await w.invalidate([3]);
    let m = (await readOutputManifest(store)) as OutputManifestV2;
    assert.equal(m.commit_seq, 2);
    assert.equal(m.records!.entries[3]!.committed, false);
    await assert.rejects(readRecord(store, "temperature", 3), NotCommitted);
    await w.writeRecordAt(3, TIMES[3]!, recordArrays(schema, 7, {}));
    await w.commit([await w.flush()]);
    m = (await readOutputManifest(store)) as OutputManifestV2;
    assert.equal(m.records!.entries[3]!.generation, 2);
    assert.equal(m.records!.entries[2]!.generation, 1);
    const r3 = await readRecord(store, "temperature", 3);
    assert.equal(r3.data[0], 1000 + 13 * 7 + 3 + 5 + 0.25);
    // record 2 shares time shard 1 with record 3 and survived the rewrite
    const r2 = await readRecord(store, "temperature", 2);
    assert.equal(r2.data[0], 1000 + 13 * 2 + 3 + 5 + 0.25);
  });

  it("§6.2 a contributor re-reads the manifest before refusing a rewrite", async () => {
    const store = newStore();
    const schema = indexedSchema(true);
    const { owner, c } = await ownerAndContributor(store, schema);
    await owner.writeRecordAt(0, 0, recordArrays(schema, 0, { lat: [0, 2] }));
    await c.writeRecordAt(
      0,
      0,
      recordArrays(schema, 0, { lat: [2, 4] }, (_, p) => p),
    );
    await owner.commit([await owner.flush(), await c.flush()]);
    await assert.rejects(
      c.writeRecordAt(
        0,
        0,
        recordArrays(schema, 5, { lat: [2, 4] }, (_, p) => p),
      ),
      ProtocolError,
    );
    await owner.invalidate([0]);
    // the contributor's view still says committed; it re-reads and is allowed
    await c.writeRecordAt(
      0,
      0,
      recordArrays(schema, 5, { lat: [2, 4] }, (_, p) => p),
    );
    await owner.writeRecordAt(0, 0, recordArrays(schema, 5, { lat: [0, 2] }));
    await owner.commit([await owner.flush(), await c.flush()]);
    const r = await readRecord(store, "temperature", 0, { lat: [2, 4] });
    assert.equal(r.data[0], 1000 + 13 * 5 + 3 * 3 + 5 + 0.25);
  });

  it("§5.3 indexed commit refuses a t that is not times[index] and an already committed index", async () => {
    const store = newStore();
    const schema = indexedSchema();
    const w = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 1 });
    await w.writeRecordAt(1, 3600, recordArrays(schema, 1, {}));
    const tok = await w.flush();
    const before = await bytesOf(store);
    await assert.rejects(w.commit([{ ...tok, records: [{ index: 1, t: 3601 }] }]), CommitError);
    assert.deepEqual(await bytesOf(store), before);
    await w.commit([tok]);
    await assert.rejects(w.commit([tok]), (e: unknown) => e instanceof CommitError && e.reason === "records");
  });

  it("§6.2 invalidate is owner-only and indexed-only", async () => {
    const s = newStore();
    const a = await ZarrStreamWriter.create(s, gridSchema(), { kind: "owner", nWriters: 1 });
    await assert.rejects(a.invalidate([0]), ProtocolError);
    const s2 = newStore();
    await ZarrStreamWriter.create(s2, indexedSchema(true), { kind: "owner", nWriters: 2 }, { lat: [0, 2] });
    const c = await ZarrStreamWriter.join(s2, { kind: "contributor", id: 1 }, { lat: [2, 4] });
    await assert.rejects(c.invalidate([0]), ProtocolError);
  });
});
