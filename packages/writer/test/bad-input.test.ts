import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ProtocolError, RegionNotShardAligned, SchemaError, ZarrStreamError } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import { ZarrStreamWriter } from "../src/index.js";
import { gridSchema, newStore, recordArrays } from "./helpers.js";
import { observedStore } from "./observed-store.js";

function countingStore(inner: Store) {
  const counter = { writes: 0 };
  const store = observedStore(inner, {
    write: () => {
      counter.writes++;
    },
  });
  return { store, counter };
}

describe("bad input is refused with a named error before any I/O", () => {
  it("§4 misaligned or out-of-range regions at create raise RegionNotShardAligned naming the dim", async () => {
    const schema = gridSchema({}, true);
    for (const [region, dim] of [
      [{ lat: [1, 2] }, "lat"],
      [{ lat: [0, 3] }, "lat"],
      [{ lon: [0, 4] }, "lon"],
      [{ lat: [0, 6] }, "lat"],
      [{ lat: [2, 2] }, "lat"],
    ] as const) {
      const { store, counter } = countingStore(newStore());
      await assert.rejects(
        ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 2 }, region as never),
        (e: unknown) => e instanceof RegionNotShardAligned && e.dim === dim,
      );
      assert.equal(counter.writes, 0);
    }
    // a region may end at a ragged last shard
    const ragged = gridSchema(
      {
        dims: [
          ["time", 0],
          ["lat", 5],
          ["lon", 6],
        ],
        coords: {},
      },
      true,
    );
    await ZarrStreamWriter.create(newStore(), ragged, { kind: "owner", nWriters: 2 }, { lat: [4, 5] });
  });

  it("regions on the time dim or an unknown dim, bad roles and bad schemas are SchemaErrors", async () => {
    const schema = gridSchema();
    const { store, counter } = countingStore(newStore());
    await assert.rejects(
      ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 2 }, { time: [0, 2] }),
      SchemaError,
    );
    await assert.rejects(
      ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 2 }, { depth: [0, 2] }),
      SchemaError,
    );
    await assert.rejects(ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 0 }), SchemaError);
    await assert.rejects(
      ZarrStreamWriter.create(store, { ...schema, profile: "fast" as never }, { kind: "single" }),
      SchemaError,
    );
    await assert.rejects(
      ZarrStreamWriter.create(store, schema, { kind: "contributor", id: 1 }),
      ProtocolError,
    );
    assert.equal(counter.writes, 0);
  });

  it("record arrays: wrong dtype, wrong length, unknown or missing variable, bad t", async () => {
    const inner = newStore();
    const schema = gridSchema();
    const { store, counter } = countingStore(inner);
    const w = await ZarrStreamWriter.create(store, schema, { kind: "single" });
    await w.writeRecord(1, recordArrays(schema, 0, {}));
    const start = counter.writes;
    const good = () => recordArrays(schema, 1, {});
    const cases: [string, () => Promise<unknown>][] = [
      ["dtype", () => w.writeRecord(2, { ...good(), temperature: new Float32Array(24) })],
      ["length", () => w.writeRecord(2, { ...good(), temperature: new Float64Array(23) })],
      ["unknown", () => w.writeRecord(2, { ...good(), humidity: new Float64Array(24) })],
      [
        "missing",
        () => {
          const { temperature: _, ...rest } = good();
          return w.writeRecord(2, rest);
        },
      ],
      ["NaN t", () => w.writeRecord(Number.NaN, good())],
      ["same t", () => w.writeRecord(1, good())],
      ["int64 as Int32Array", () => w.writeRecord(2, { ...good(), total: new Int32Array(1) as never })],
      ["blob on v1", () => w.writeBlob("static", "k", new Uint8Array(1))],
      ["unknown static", () => w.writeStatic("nope", new Float64Array(1))],
    ];
    for (const [what, call] of cases) {
      await assert.rejects(
        call(),
        (e: unknown) => e instanceof ZarrStreamError && e.message.length > 0,
        what,
      );
    }
    // -0 does not round-trip through JSON in every language (writer-decisions.md rule 22)
    const fresh = await ZarrStreamWriter.create(newStore(), schema, { kind: "single" });
    await assert.rejects(
      fresh.writeRecord(-0, good()),
      (e: unknown) => e instanceof SchemaError && e.pointer === "/t" && /-0/.test(e.message),
    );
    assert.equal(await fresh.writeRecord(0, good()), 0, "t = 0 is a time like any other");
    // the time shard was not touched by any refused call: record 1 still follows record 0
    assert.equal(await w.writeRecord(2, good()), 1);
    assert.ok(counter.writes >= start);
  });

  it("blob keys with '/' and bad scopes, negative or fractional indices are refused before writing", async () => {
    const schema = gridSchema({ time_mode: { indexed: { times: [0, 1] } } });
    const { store, counter } = countingStore(newStore());
    const w = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 1 });
    const start = counter.writes;
    await assert.rejects(w.writeBlob("static", "a/b", new Uint8Array(1)), SchemaError);
    await assert.rejects(w.writeBlob({ record: -1 }, "k", new Uint8Array(1)), SchemaError);
    await assert.rejects(w.writeBlob({ record: 0.5 }, "k", new Uint8Array(1)), SchemaError);
    await assert.rejects(w.writeBlob({ record: 2 }, "k", new Uint8Array(1)), SchemaError);
    await assert.rejects(w.writeRecordAt(-1, 0, recordArrays(schema, 0, {})), SchemaError);
    await assert.rejects(w.writeRecordAt(1.5, 0, recordArrays(schema, 0, {})), SchemaError);
    await assert.rejects(w.invalidate([-1]), SchemaError);
    await assert.rejects(w.invalidate(3 as unknown as number[]), SchemaError);
    await assert.rejects(w.invalidateStatics("area" as unknown as string[]), SchemaError);
    assert.equal(counter.writes, start);
  });

  it("create refuses a store that already holds one (committed data is never clobbered)", async () => {
    const store = newStore();
    await ZarrStreamWriter.create(store, gridSchema(), { kind: "owner", nWriters: 1 });
    await assert.rejects(
      ZarrStreamWriter.create(store, gridSchema(), { kind: "owner", nWriters: 1 }),
      ProtocolError,
    );
  });

  it("a closed writer refuses further calls", async () => {
    const schema = gridSchema();
    const w = await ZarrStreamWriter.create(newStore(), schema, { kind: "single" });
    await w.close();
    await assert.rejects(w.writeRecord(1, recordArrays(schema, 0, {})), ProtocolError);
    await assert.rejects(w.flush(), ProtocolError);
  });
});
