import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { readRecord, readStatic } from "@zarr-stream/reader";
import { SchemaError } from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";
import { serveViewer } from "../src/index.js";
import { StoreView } from "../src/page/model.js";
import { LAT, LON, NLAT, NLON, T0, temperatureAt, writeDemo } from "./demo-store.js";
import { precipAt, pythonSkipReason, writeZarrPythonStore } from "./python-store.js";
import { httpStoreOf } from "./serve-client.js";

async function viewOf(dir: string) {
  const server = await serveViewer(dir);
  const store = httpStoreOf(server);
  const view = await StoreView.open(store, () => store.listMetadata());
  return { server, store, view };
}

describe("viewer model over HTTP", () => {
  it("§7/§8 v2 store: variables, statics, committed records with t, commit state; slices equal readRecord", async () => {
    const demo = await writeDemo("v2", "diagnostic", 2);
    const { server, view } = await viewOf(demo.dir);
    try {
      assert.equal(view.mode, "v2");
      assert.deepEqual(
        view.variables.map((v) => [v.name, v.kind, v.units, v.timeAxis]),
        [
          ["temperature", "record", "K", 0],
          ["wind", "record", "m s-1", 0],
          ["orography", "static", "m", -1],
        ],
      );
      assert.deepEqual(view.records, [
        { index: 0, t: 0 },
        { index: 1, t: T0 },
      ]);
      assert.equal(view.timeUnits, "seconds since 2026-01-01 00:00:00");
      const s = view.summary();
      assert.deepEqual(
        [s.mode, s.commitSeq, s.nRecords, s.nWriters, s.timeMode, s.profile, s.lastT],
        ["v2", 2, 2, 2, "append", "diagnostic", T0],
      );
      assert.deepEqual(s.statics, [{ name: "orography", committed: true }]);
      assert.deepEqual(s.blobs.map((b) => `${b.scope}:${b.record ?? ""}:${b.writer}:${b.key}`).sort(), [
        "record:0:1:rng-state",
        "record:1:1:rng-state",
        "static::0:config.json",
      ]);

      const slice = await view.readSlice("temperature", 1);
      assert.equal(slice.ny, NLAT);
      assert.equal(slice.nx, NLON);
      assert.deepEqual(Array.from(slice.yCoord!), LAT);
      assert.deepEqual(Array.from(slice.xCoord!), LON);
      assert.equal(slice.yUnits, "degrees_north");
      const direct = await readRecord(demo.store, "temperature", 1);
      assert.deepEqual(Array.from(slice.values), Array.from(direct.data as Float64Array));
      assert.equal(slice.values[5 * NLON + 7], temperatureAt(1, LAT[5]!, LON[7]!));
      const wind = await view.readSlice("wind", 0);
      assert.deepEqual([wind.ny, wind.nx], [1, NLON]);
      const oro = await view.readSlice("orography", undefined);
      assert.deepEqual(
        Array.from(oro.values),
        Array.from((await readStatic(demo.store, "orography")).data, Number),
      );
      await assert.rejects(view.readSlice("temperature", 2), SchemaError);
      await assert.rejects(view.readSlice("nope", 0), SchemaError);

      assert.equal(await view.refresh(), false, "nothing committed: no change");
      await demo.commitNext();
      assert.equal(await view.refresh(), true, "a commit bumps commit_seq");
      assert.equal(view.summary().commitSeq, 3);
      assert.deepEqual(view.records.at(-1), { index: 2, t: 2 * T0 });
      assert.equal((await view.readSlice("temperature", 2)).values[0], temperatureAt(2, LAT[0]!, LON[0]!));
    } finally {
      await server.close();
    }
  });

  it("§6.2 indexed store: only committed records are listed (a hole stays a hole), t from the manifest", async () => {
    const demo = await writeDemo("indexed", "wasm", 2); // commits records 0 and 2
    const { server, view } = await viewOf(demo.dir);
    try {
      assert.deepEqual(view.records, [
        { index: 0, t: 0 },
        { index: 2, t: 2 * T0 },
      ]);
      assert.equal(view.summary().timeMode, "indexed");
      const slice = await view.readSlice("temperature", 2);
      assert.equal(slice.values[3], temperatureAt(2, LAT[0]!, LON[3]!));
      await demo.commitNext(); // record 1
      assert.equal(await view.refresh(), true);
      assert.deepEqual(
        view.records.map((r) => r.index),
        [0, 1, 2],
      );
    } finally {
      await server.close();
    }
  });

  it("§8.1 v1 store: n_records is the version; commit_seq and writers as v1 has them", async () => {
    const demo = await writeDemo("v1", "checkpoint", 1);
    const { server, view } = await viewOf(demo.dir);
    try {
      const s = view.summary();
      assert.deepEqual(
        [s.mode, s.commitSeq, s.nRecords, s.nWriters, s.statics.length],
        ["v1", undefined, 1, 1, 0],
      );
      assert.equal(await view.refresh(), false);
      await demo.commitNext();
      assert.equal(await view.refresh(), true);
      assert.equal(view.records.length, 2);
    } finally {
      await server.close();
    }
  });

  it(
    "plain Zarr written by zarr-python (sharded, no manifest): arrays from the listing, t from the time coordinate",
    {
      skip: pythonSkipReason(),
    },
    async () => {
      const dir = writeZarrPythonStore();
      const { server, view } = await viewOf(dir);
      try {
        assert.equal(view.mode, "plain");
        assert.deepEqual(
          view.variables.map((v) => [v.name, v.timeAxis, v.units]),
          [
            ["mask", -1, undefined],
            ["precip", 0, "mm"],
          ],
        );
        assert.deepEqual(view.records, [
          { index: 0, t: 0 },
          { index: 1, t: 6 },
          { index: 2, t: 12 },
        ]);
        assert.equal(view.timeUnits, "hours since 2000-01-01");
        const slice = await view.readSlice("precip", 2);
        assert.deepEqual([slice.ny, slice.nx], [4, 5]);
        assert.deepEqual(Array.from(slice.yCoord!), [-30, -10, 10, 30]);
        for (let i = 0; i < 4; i++)
          for (let j = 0; j < 5; j++) assert.equal(slice.values[i * 5 + j], precipAt(2, i, j));
        const mask = await view.readSlice("mask", undefined);
        assert.deepEqual(
          Array.from(mask.values),
          Array.from({ length: 20 }, (_, k) => k % 3),
        );
        assert.equal(view.summary().mode, "plain");
      } finally {
        await server.close();
      }
    },
  );

  it("a variable with more than two non-time dims: the extra dim is held at the chosen index", async () => {
    const dir = await mkdtemp(join(tmpdir(), "zs-viewer-4d-"));
    const w = await ZarrStreamWriter.create(
      new FsStore(dir),
      {
        dims: [
          ["time", 0],
          ["lev", 3],
          ["lat", 2],
          ["lon", 4],
        ],
        time_dim: "time",
        time_mode: "append",
        vars: [{ name: "q", dims: ["time", "lev", "lat", "lon"], dtype: "int32" }],
        statics: [],
        chunk_shape: { time: 1, lev: 1, lat: 2, lon: 4 },
        shard_shape: { time: 1, lev: 3, lat: 2, lon: 4 },
        profile: "wasm",
      },
      { kind: "single" },
    );
    await w.writeRecord(0, { q: Int32Array.from({ length: 24 }, (_, k) => k) });
    await w.flush();
    const { server, view } = await viewOf(dir);
    try {
      const slice = await view.readSlice("q", 0, { lev: 2 });
      assert.deepEqual(slice.plane, { fixedDims: ["lev"], yDim: "lat", xDim: "lon" });
      assert.deepEqual([slice.ny, slice.nx], [2, 4]);
      assert.deepEqual(Array.from(slice.values), [16, 17, 18, 19, 20, 21, 22, 23]);
      assert.deepEqual(Array.from((await view.readSlice("q", 0)).values), [0, 1, 2, 3, 4, 5, 6, 7]);
      await assert.rejects(view.readSlice("q", 0, { lev: 3 }), SchemaError);
    } finally {
      await server.close();
    }
  });
});
