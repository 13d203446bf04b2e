import assert from "node:assert/strict";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import type { OutputManifestV2, StreamSchema } from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";
import type { InspectReport } from "../src/index.js";
import { tempDir, zstream } from "./helpers.js";

const schema: StreamSchema = {
  dims: [
    ["time", 0],
    ["y", 4],
    ["x", 6],
  ],
  time_dim: "time",
  time_mode: "append",
  vars: [
    { name: "h", dims: ["time", "y", "x"], dtype: "float64", attrs: { units: "m" } },
    { name: "total", dims: ["time"], dtype: "int64" },
  ],
  statics: [{ name: "depth", dims: ["y", "x"], dtype: "float32" }],
  chunk_shape: { time: 1, y: 1, x: 3 },
  shard_shape: { time: 2, y: 2, x: 6 },
  profile: "wasm",
  coords: { y: { values: [0, 1, 2, 3], attrs: { units: "km" } } },
};

const root = tempDir("inspect");
after(() => rmSync(root, { recursive: true, force: true }));

function field(n: number, base: number): Float64Array {
  return Float64Array.from({ length: n }, (_, i) => base + i);
}

describe("zstream inspect (child process)", () => {
  it("§5 inspect --json matches the writer's own view, and lists uncommitted leftovers", async () => {
    const dir = join(root, "two-writers.zarr");
    const store = new FsStore(dir);
    const owner = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 2 }, { y: [0, 2] });
    const c = await ZarrStreamWriter.join(store, { kind: "contributor", id: 1 }, { y: [2, 4] });
    await owner.writeStatic(
      "depth",
      Float32Array.from({ length: 12 }, (_, i) => i),
    );
    await c.writeStatic(
      "depth",
      Float32Array.from({ length: 12 }, (_, i) => 100 + i),
    );
    const times = [0, 60, 120];
    for (const [r, t] of times.entries()) {
      await owner.writeRecord(t, { h: field(12, r), total: BigInt64Array.of(BigInt(r)) });
      await c.writeRecord(t, { h: field(12, 50 + r) });
    }
    await owner.writeBlob({ record: 2 }, "rng", Uint8Array.of(1, 2, 3));
    await c.writeBlob("static", "seed", Uint8Array.of(9));
    const receipt = await owner.commit([await owner.flush(), await c.flush()]);
    // a crash after these flushes: data objects of records 3..4 exist, the manifest never names them
    for (const [r, t] of [180, 240].entries()) {
      await owner.writeRecord(t, { h: field(12, 10 + r), total: BigInt64Array.of(7n) });
      await c.writeRecord(t, { h: field(12, 60 + r) });
    }
    const leftover = await c.flush();
    await owner.flush();

    const r = zstream("inspect", dir, "--json");
    assert.equal(r.status, 0, r.stderr);
    const report = JSON.parse(r.stdout) as InspectReport;
    assert.equal(report.format, "zarr-stream");
    const m = owner.lastManifest as OutputManifestV2;
    assert.equal(report.manifest.label, "earthsciio/output-manifest/v2");
    assert.equal(report.commit_seq, receipt.commit_seq);
    assert.equal(report.records.count, receipt.n_committed);
    assert.equal(report.records.first_t, 0);
    assert.equal(report.records.last_t, m.last_t);
    assert.equal(report.n_writers, m.n_writers);
    assert.deepEqual(report.region_dims, m.region_dims);
    assert.deepEqual(report.blobs, m.blobs);
    assert.deepEqual(
      report.statics.map((s) => [s.name, s.committed]),
      m.statics.map((s) => [s.name, m.statics_committed.includes(s.name)]),
    );
    const h = report.arrays.find((a) => a.name === "h")!;
    assert.deepEqual(h.shape, [3, 4, 6]);
    assert.deepEqual(h.shard_shape, [2, 2, 6]);
    assert.deepEqual(h.chunk_shape, [1, 1, 3]);
    assert.equal(h.codec, "zstd level 5");
    assert.deepEqual(
      report.arrays.map((a) => [a.name, a.kind]),
      [
        ["time", "time"],
        ["y", "coord"],
        ["h", "var"],
        ["total", "var"],
        ["depth", "static"],
      ],
    );
    // records 3 and 4 sit in time shard 1 (records 2..3, committed up to 2) and time shard 2 (uncommitted)
    const leftoverKeys = report.uncommitted.map((u) => u.key);
    for (const k of leftover.objects.filter((o) => o.startsWith("h/c/2/")))
      assert.ok(leftoverKeys.includes(k), `${k} not reported`);
    assert.deepEqual(leftoverKeys, ["h/c/2/0/0", "h/c/2/1/0", "time/c/2", "total/c/2"]);
    assert.equal(report.bytes_on_disk > 0, true);

    const human = zstream("inspect", dir);
    assert.equal(human.status, 0);
    assert.match(human.stdout, /commit_seq 1/);
    assert.match(human.stdout, /uncommitted +\d+ object/);
  });

  it("§6.2 inspect shows an indexed store's generations and what is committed now", async () => {
    const dir = join(root, "indexed.zarr");
    const times = [0, 10, 20, 30];
    const w = await ZarrStreamWriter.create(
      new FsStore(dir),
      { ...schema, statics: [], time_mode: { indexed: { times } } },
      { kind: "owner", nWriters: 1 },
    );
    const arrays = (r: number) => ({ h: field(24, r), total: BigInt64Array.of(BigInt(r)) });
    await w.writeRecordAt(2, 20, arrays(2));
    await w.writeRecordAt(0, 0, arrays(0));
    await w.commit([await w.flush()]);
    await w.invalidate([2]);
    await w.writeRecordAt(2, 20, arrays(5));
    await w.commit([await w.flush()]);
    await w.invalidate([0]);
    const r = zstream("inspect", dir, "--json");
    assert.equal(r.status, 0, r.stderr);
    const report = JSON.parse(r.stdout) as InspectReport;
    assert.equal(report.time_mode, "indexed");
    assert.equal(report.commit_seq, 4);
    assert.deepEqual(report.records.generations, [
      { index: 0, t: 0, committed: false, generation: 1 },
      { index: 1, t: 10, committed: false, generation: 0 },
      { index: 2, t: 20, committed: true, generation: 2 },
      { index: 3, t: 30, committed: false, generation: 0 },
    ]);
    assert.deepEqual([report.records.count, report.records.first_t, report.records.last_t], [1, 20, 20]);
    const human = zstream("inspect", dir);
    assert.match(human.stdout, /generations +0:!1 1:!0 2:2 3:!0/);
    const v = zstream("verify", dir, "--deep");
    assert.equal(v.status, 0, v.stdout);
  });

  it("§8.1 a Single-writer v1 store inspects as version 1 without commit_seq and verifies", async () => {
    const dir = join(root, "single.zarr");
    const w = await ZarrStreamWriter.create(new FsStore(dir), { ...schema, statics: [] }, { kind: "single" });
    for (const t of [0, 30, 60]) {
      await w.writeRecord(t, { h: field(24, t), total: BigInt64Array.of(1n) });
      await w.flush();
    }
    await w.close();
    const report = JSON.parse(zstream("inspect", dir, "--json").stdout) as InspectReport;
    assert.deepEqual(report.manifest, { label: "earthsciio/output-manifest/v1", version: 1, pages: 0 });
    assert.equal(report.commit_seq, null);
    assert.deepEqual([report.records.count, report.records.first_t, report.records.last_t], [3, 0, 60]);
    assert.deepEqual(report.uncommitted, []);
    assert.equal(zstream("verify", dir, "--deep").status, 0);
  });

  it("§7 inspect of a path that does not exist is one line naming it, exit 2; of an empty directory, exit 3", () => {
    const r = zstream("inspect", join(root, "nothing-here"));
    assert.equal(r.status, 2);
    assert.equal(r.stderr.trim().split("\n").length, 1);
    assert.match(r.stderr, /STORE .*nothing-here does not exist/);
    const empty = join(root, "empty");
    mkdirSync(empty);
    const e = zstream("inspect", empty);
    assert.equal(e.status, 3);
    assert.equal(e.stderr.trim().split("\n").length, 1);
    assert.match(e.stderr, /neither output_manifest\.json nor zarr\.json/);
  });
});
