import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { openArray, readArrayRegion, readOutputManifest, readRecord, readStatic } from "@zarr-stream/reader";
import { StoreError } from "@zarr-stream/spec";
import { FsStore, fromZarritaStore, type ReadableStore, toZarritaStore } from "@zarr-stream/store";
import { tempDir } from "@zarr-stream/test-support/temp-dirs";
import { defineSchema, ZarrStreamWriter } from "@zarr-stream/writer";
import FileSystemStore from "@zarrita/storage/fs";
import * as zarr from "zarrita";

/*
 * zarrita (0.7) and our reader on one store our writer made, through the store package's adapters: zarrita
 * reads our FsStore (toZarritaStore), and our reader reads through zarrita's FileSystemStore
 * (fromZarritaStore). Shards hold 2 records and cut lat 5 mid-shard, so both read partial shards and
 * record boxes inside shards.
 */

const schema = defineSchema({
  dims: [
    ["time", 0],
    ["lat", 5],
    ["lon", 6],
  ],
  time_dim: "time",
  time_mode: "append",
  vars: [
    { name: "t2m", dims: ["time", "lat", "lon"], dtype: "float64", attrs: { units: "K" } },
    { name: "precip", dims: ["time", "lon"], dtype: "float32" },
  ],
  statics: [{ name: "orography", dims: ["lat", "lon"], dtype: "int32" }],
  chunk_shape: { time: 1, lat: 2, lon: 3 },
  shard_shape: { time: 2, lat: 4, lon: 6 },
  profile: "diagnostic",
});
const RECORDS = 3;
const t2m = (r: number) => Float64Array.from({ length: 30 }, (_, i) => 250 + r * 10 + i / 8);
const precip = (r: number) => Float32Array.from({ length: 6 }, (_, i) => r + i / 4);

async function writeStore(): Promise<string> {
  const dir = tempDir("zarrita-adapters");
  const w = await ZarrStreamWriter.create(new FsStore(dir), schema, { kind: "single" });
  await w.writeStatic(
    "orography",
    Int32Array.from({ length: 30 }, (_, i) => i * 7 - 40),
  );
  for (let r = 0; r < RECORDS; r++) await w.writeRecord(3600 * r, { t2m: t2m(r), precip: precip(r) });
  await w.close();
  return dir;
}

const dir = await writeStore();

describe("zarrita reads our stores through toZarritaStore", () => {
  it("zarrita.open + get of each record equals our readRecord, for every variable", async () => {
    const ours = new FsStore(dir);
    const root = zarr.root(toZarritaStore(ours));
    for (const name of ["t2m", "precip"]) {
      const arr = await zarr.open.v3(root.resolve(name), { kind: "array" });
      assert.deepEqual(arr.shape[0], RECORDS, `${name}: zarrita sees the committed records`);
      for (let r = 0; r < RECORDS; r++) {
        const rest = arr.shape.slice(1).map(() => null);
        const theirs = await zarr.get(arr, [r, ...rest]);
        const rec = await readRecord(ours, name, r);
        assert.deepEqual(theirs.shape, rec.shape, `${name} record ${r}`);
        assert.deepEqual(Array.from(theirs.data as Float64Array), [...rec.data], `${name} record ${r}`);
      }
    }
    const expected = t2m(2);
    const box = await zarr.get(await zarr.open.v3(root.resolve("t2m"), { kind: "array" }), [
      2,
      zarr.slice(3, 5),
      4,
    ]);
    assert.deepEqual(Array.from(box.data as Float64Array), [expected[3 * 6 + 4], expected[4 * 6 + 4]]);
  });

  it("zarrita reads the static and the group's attributes as our reader does", async () => {
    const ours = new FsStore(dir);
    const root = zarr.root(toZarritaStore(ours));
    const oro = await zarr.get(await zarr.open.v3(root.resolve("orography"), { kind: "array" }));
    assert.deepEqual(Array.from(oro.data as Int32Array), [...(await readStatic(ours, "orography")).data]);
    const group = await zarr.open.v3(root, { kind: "group" });
    assert.equal(typeof group.attrs, "object");
  });
});

describe("our reader reads through zarrita's FileSystemStore (fromZarritaStore)", () => {
  it("readOutputManifest, readRecord, readStatic and readArrayRegion give what they give on our FsStore", async () => {
    const ours = new FsStore(dir);
    const theirs: ReadableStore = fromZarritaStore(new FileSystemStore(dir));
    assert.deepEqual(await readOutputManifest(theirs), await readOutputManifest(ours));
    for (let r = 0; r < RECORDS; r++) {
      for (const name of ["t2m", "precip"]) {
        const a = await readRecord(theirs, name, r);
        const b = await readRecord(ours, name, r);
        assert.deepEqual([a.dims, a.shape, [...a.data]], [b.dims, b.shape, [...b.data]]);
      }
    }
    const sub = await readRecord(theirs, "t2m", 1, { lat: [3, 5], lon: [1, 3] });
    const full = t2m(1);
    assert.deepEqual([...sub.data], [full[19], full[20], full[25], full[26]]);
    assert.deepEqual(
      [...(await readStatic(theirs, "orography")).data],
      [...(await readStatic(ours, "orography")).data],
    );
    const arr = await openArray(theirs, "t2m");
    const region = await readArrayRegion(theirs, "t2m", arr, [
      [0, 3],
      [4, 5],
      [5, 6],
    ]);
    assert.deepEqual([...region], [t2m(0)[29], t2m(1)[29], t2m(2)[29]]);
  });

  it("a zarrita store handed to our reader unwrapped is refused by name, pointing at fromZarritaStore", async () => {
    const bare = new FileSystemStore(dir) as unknown as ReadableStore;
    await assert.rejects(readRecord(bare, "t2m", 0), (err: unknown) => {
      assert.ok(err instanceof StoreError, String(err));
      assert.match(err.message, /fromZarritaStore/);
      return true;
    });
  });
});
