import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { readBlob, readOutputManifest, readStatic } from "@zarr-stream/reader";
import {
  CommitError,
  NotCommitted,
  type OutputManifestV2,
  ProtocolError,
  SchemaError,
} from "@zarr-stream/spec";
import { ZarrStreamWriter } from "../src/index.js";
import { gridSchema, newStore, ownerAndContributor, recordArrays, staticArray } from "./helpers.js";
import { writeGate } from "./write-gate.js";

const withStatics = () =>
  gridSchema(
    {
      statics: [
        { name: "area", dims: ["lat", "lon"], dtype: "float32", attrs: { units: "m2" } },
        { name: "mask", dims: ["lon"], dtype: "uint8" },
      ],
    },
    true,
  );

async function twoWriters() {
  const store = newStore();
  const schema = withStatics();
  const owner = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 2 }, { lat: [0, 2] });
  const c = await ZarrStreamWriter.join(store, { kind: "contributor", id: 1 }, { lat: [2, 4] });
  return { store, schema, owner, c };
}

describe("§7 statics and blobs", () => {
  it("partitioned statics from every writer and a replicated one from the owner commit and read back", async () => {
    const { store, schema, owner, c } = await twoWriters();
    await owner.writeStatic("area", staticArray(schema, "area", { lat: [0, 2] }));
    await c.writeStatic("area", staticArray(schema, "area", { lat: [2, 4] }));
    await owner.writeStatic("mask", staticArray(schema, "mask", {}));
    await assert.rejects(readStatic(store, "area"), NotCommitted);
    await owner.commit([await owner.flush(), await c.flush()]);
    const area = await readStatic(store, "area");
    assert.deepEqual(
      Array.from(area.data as Float32Array),
      Array.from(staticArray(schema, "area", {}) as Float32Array),
    );
    const mask = await readStatic(store, "mask", { lon: [3, 6] });
    assert.deepEqual(
      Array.from(mask.data as Uint8Array),
      Array.from(staticArray(schema, "mask", { lon: [3, 6] }) as Uint8Array),
    );
  });

  it("§5.2 a flush while a static is half written commits it with the next token, whole", async () => {
    const schema = withStatics();
    const inner = newStore();
    // The static's second shard is held at the store while the flush runs.
    const gate = writeGate(inner, (key) => key === "area/c/0/1");
    const w = await ZarrStreamWriter.create(gate.store, schema, { kind: "single" });
    const area = staticArray(schema, "area", {});
    gate.hold();
    const writing = w.writeStatic("area", area);
    await gate.reached;
    const first = await w.flush();
    assert.deepEqual(first.statics, [], "the static is not in the token of a flush that overtook it");
    await assert.rejects(readStatic(inner, "area"), NotCommitted);
    gate.release();
    await writing;
    assert.deepEqual((await w.flush()).statics, ["area"]);
    await w.close();
    assert.deepEqual(
      Array.from((await readStatic(inner, "area")).data as Float32Array),
      Array.from(area as Float32Array),
    );
  });

  it("§5.3 a partitioned static missing from one writer's token is a CommitError", async () => {
    const { schema, owner, c } = await twoWriters();
    await owner.writeStatic("area", staticArray(schema, "area", { lat: [0, 2] }));
    await assert.rejects(
      owner.commit([await owner.flush(), await c.flush()]),
      (e: unknown) => e instanceof CommitError && e.reason === "statics" && e.writers.includes(1),
    );
  });

  it("a contributor may not write a replicated static; a committed static needs invalidate_statics", async () => {
    const { schema, owner, c } = await twoWriters();
    await assert.rejects(c.writeStatic("mask", staticArray(schema, "mask", {})), ProtocolError);
    await owner.writeStatic("mask", staticArray(schema, "mask", {}));
    await owner.commit([await owner.flush(), await c.flush()]);
    await assert.rejects(owner.writeStatic("mask", staticArray(schema, "mask", {})), ProtocolError);
    await owner.invalidateStatics(["mask"]);
    await owner.writeStatic("mask", staticArray(schema, "mask", {}));
    const receipt = await owner.commit([await owner.flush(), await c.flush()]);
    assert.deepEqual(receipt.manifest.statics_committed, ["mask"]);
  });

  it("blobs: keys, paths, commit, rewrite of a committed blob, invalidate uncommits record blobs", async () => {
    const store = newStore();
    const schema = gridSchema({ time_mode: { indexed: { times: [0, 1, 2, 3] } } }, true);
    const { owner, c } = await ownerAndContributor(store, schema);
    for (const bad of ["a/b", ".", "..", "", "sp ace", "ü"]) {
      await assert.rejects(c.writeBlob("static", bad, new Uint8Array(1)), SchemaError, bad);
    }
    await c.writeBlob("static", "rng", Uint8Array.of(0, 255));
    await c.writeBlob({ record: 2 }, "state.bin", Uint8Array.of(7));
    assert.ok((await store.list("blobs/")).includes("blobs/static/1/rng"));
    assert.ok((await store.list("blobs/")).includes("blobs/record/2/1/state.bin"));
    await assert.rejects(readBlob(store, "static", 1, "rng"), NotCommitted);
    const t1 = await c.flush();
    assert.deepEqual(t1.blobs, [
      { scope: "record", record: 2, key: "state.bin" },
      { scope: "static", key: "rng" },
    ]);
    await owner.commit([await owner.flush(), t1]);
    assert.deepEqual(Array.from(await readBlob(store, "static", 1, "rng")), [0, 255]);
    await c.writeBlob("static", "rng", Uint8Array.of(9));
    assert.deepEqual(Array.from(await readBlob(store, "static", 1, "rng")), [9]);
    await owner.invalidate([2]);
    await assert.rejects(readBlob(store, { record: 2 }, 1, "state.bin"), NotCommitted);
    const m = (await readOutputManifest(store)) as OutputManifestV2;
    assert.deepEqual(m.blobs, [{ scope: "static", writer: 1, key: "rng" }]);
  });

  it("statics and records in one store read back independently", async () => {
    const { schema, owner, c } = await twoWriters();
    await owner.writeRecord(5, recordArrays(schema, 0, { lat: [0, 2] }));
    await c.writeRecord(
      5,
      recordArrays(schema, 0, { lat: [2, 4] }, (_, p) => p),
    );
    await owner.writeStatic("mask", staticArray(schema, "mask", {}));
    const r = await owner.commit([await owner.flush(), await c.flush()]);
    assert.equal(r.n_committed, 1);
    assert.deepEqual(r.manifest.statics_committed, ["mask"]);
  });
});
