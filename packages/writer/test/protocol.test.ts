import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { readOutputManifest, readRecord } from "@zarr-stream/reader";
import {
  CommitError,
  type CommitToken,
  Fenced,
  NotCommitted,
  type OutputManifestV2,
  ProtocolError,
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

const T = [0, 3600, 7200, 10800, 14400];

async function singleRun(n: number, flushEvery = 1) {
  const store = newStore();
  const schema = gridSchema();
  const w = await ZarrStreamWriter.create(store, schema, { kind: "single" });
  for (let r = 0; r < n; r++) {
    await w.writeRecord(T[r]!, recordArrays(schema, r, {}));
    if ((r + 1) % flushEvery === 0) await w.flush();
  }
  await w.close();
  return store;
}

/** Owner + 3 contributors on a 2x2 lat/lon split. */
async function tiledRun(n: number) {
  const store = newStore();
  const schema = gridSchema({}, true);
  const regions = [
    { lat: [0, 2], lon: [0, 3] },
    { lat: [0, 2], lon: [3, 6] },
    { lat: [2, 4], lon: [0, 3] },
    { lat: [2, 4], lon: [3, 6] },
  ] as { lat: [number, number]; lon: [number, number] }[];
  const owner = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 4 }, regions[0]);
  const others = await Promise.all(
    [1, 2, 3].map((id) => ZarrStreamWriter.join(store, { kind: "contributor", id }, regions[id])),
  );
  for (let r = 0; r < n; r++) {
    await owner.writeRecord(T[r]!, recordArrays(schema, r, regions[0]!));
    for (const w of others) {
      await w.writeRecord(
        T[r]!,
        recordArrays(schema, r, regions[w.writerId]!, (_, p) => p),
      );
    }
  }
  const tokens = await Promise.all(others.map((w) => w.flush()));
  const manifest = await owner.close(tokens);
  return { store, schema, manifest: manifest as OutputManifestV2, owner, others, regions };
}

describe("§5 roles and protocol", () => {
  it("§5.1 create writes group, arrays and a v2 manifest at commit_seq 0", async () => {
    const store = newStore();
    await ZarrStreamWriter.create(store, gridSchema(), { kind: "owner", nWriters: 1 });
    const m = (await readOutputManifest(store)) as OutputManifestV2;
    assert.equal(m.schema, "earthsciio/output-manifest/v2");
    assert.equal(m.commit_seq, 0);
    assert.equal(m.n_records, 0);
    const keys = await store.list("");
    for (const k of [
      "zarr.json",
      "temperature/zarr.json",
      "time/zarr.json",
      "lat/zarr.json",
      "output_manifest.json",
    ]) {
      assert.ok(keys.includes(k), `${k} missing from ${keys}`);
    }
  });

  it("§8.1 a Single append store without statics writes v1 only at its first commit", async () => {
    const store = newStore();
    const schema = gridSchema();
    const w = await ZarrStreamWriter.create(store, schema, { kind: "single" });
    assert.equal(await store.get("output_manifest.json"), undefined);
    await w.writeRecord(0, recordArrays(schema, 0, {}));
    await w.flush();
    const m = await readOutputManifest(store);
    assert.equal(m.schema, "earthsciio/output-manifest/v1");
    assert.equal(m.n_records, 1);
    await assert.rejects(w.writeBlob("static", "rng", new Uint8Array([1])), ProtocolError);
  });

  it("§10 region-tiling: 2x2 region writers equal one Single writer, decoded bitwise", async () => {
    const single = await singleRun(5, 2);
    const { store, manifest } = await tiledRun(5);
    assert.equal(manifest.n_records, 5);
    assert.equal(manifest.n_writers, 4);
    assert.deepEqual(manifest.region_dims, ["lat", "lon"]);
    const a = JSON.parse(await committedDump(single));
    const b = JSON.parse(await committedDump(store));
    assert.deepEqual(b.slice(2), a.slice(2));
  });

  it("§4 every shard object has exactly one writer (tokens' objects are disjoint)", async () => {
    const store = newStore();
    const schema = gridSchema({}, true);
    const regions = [{ lat: [0, 2] as [number, number] }, { lat: [2, 4] as [number, number] }];
    const owner = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 2 }, regions[0]);
    const c = await ZarrStreamWriter.join(store, { kind: "contributor", id: 1 }, regions[1]);
    for (let r = 0; r < 4; r++) {
      await owner.writeRecord(T[r]!, recordArrays(schema, r, regions[0]!));
      await c.writeRecord(
        T[r]!,
        recordArrays(schema, r, regions[1]!, (_, p) => p),
      );
    }
    const t1 = await c.flush();
    const t0 = await owner.flush();
    const shared = t0.objects.filter((k) => t1.objects.includes(k));
    assert.deepEqual(shared, []);
    // zonal [time, lon] lacks lat: only the writer starting at lat 0 (the owner) writes it
    assert.ok(t0.objects.some((k) => k.startsWith("zonal/")));
    assert.ok(!t1.objects.some((k) => k.startsWith("zonal/")));
    assert.ok(t1.objects.some((k) => k.startsWith("temperature/")));
    await owner.commit([t0, t1]);
    assert.equal((await readOutputManifest(store)).n_records, 4);
  });

  it("§4 a contributor supplying a replicated variable gets an error", async () => {
    const store = newStore();
    const schema = gridSchema({}, true);
    await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 2 }, { lat: [0, 2] });
    const c = await ZarrStreamWriter.join(store, { kind: "contributor", id: 1 }, { lat: [2, 4] });
    await assert.rejects(c.writeRecord(0, recordArrays(schema, 0, { lat: [2, 4] })), ProtocolError);
  });

  it("§5.3 commit refuses a gap and an overlap and leaves every byte unchanged", async () => {
    for (const [r1, reason] of [
      [{ lat: [2, 4] as [number, number] }, "ok"],
      [{ lat: [0, 2] as [number, number] }, "overlap"],
    ] as const) {
      const store = newStore();
      const schema = gridSchema(
        {
          dims: [
            ["time", 0],
            ["lat", 6],
            ["lon", 6],
          ],
          coords: {},
        },
        true,
      );
      const owner = await ZarrStreamWriter.create(
        store,
        schema,
        { kind: "owner", nWriters: 2 },
        { lat: [0, 2] },
      );
      const c = await ZarrStreamWriter.join(store, { kind: "contributor", id: 1 }, r1);
      await owner.writeRecord(0, recordArrays(schema, 0, { lat: [0, 2] }));
      await c.writeRecord(
        0,
        recordArrays(schema, 0, r1, (_, p) => p),
      );
      const t1 = await c.flush();
      const t0 = await owner.flush();
      const before = await bytesOf(store);
      const err = await owner.commit([t0, t1]).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(err instanceof CommitError, `expected CommitError, got ${err}`);
      assert.equal(err.reason, reason === "ok" ? "gap" : "overlap");
      assert.deepEqual(err.writers.sort(), reason === "ok" ? err.writers.sort() : [0, 1]);
      assert.deepEqual(await bytesOf(store), before);
      assert.equal(((await readOutputManifest(store)) as OutputManifestV2).commit_seq, 0);
    }
  });

  it("§5.3 commit refuses token mutations: fingerprint, t bit, record set, duplicate or missing writer", async () => {
    const schema = gridSchema({}, true);
    const s2 = newStore();
    const owner = await ZarrStreamWriter.create(s2, schema, { kind: "owner", nWriters: 2 }, { lat: [0, 2] });
    const c = await ZarrStreamWriter.join(s2, { kind: "contributor", id: 1 }, { lat: [2, 4] });
    await owner.writeRecord(0.1, recordArrays(schema, 0, { lat: [0, 2] }));
    await c.writeRecord(
      0.1,
      recordArrays(schema, 0, { lat: [2, 4] }, (_, p) => p),
    );
    const t0 = await owner.flush();
    const t1 = await c.flush();
    const before = await bytesOf(s2);
    const mutate = (f: (t: CommitToken) => void) => {
      const t = structuredClone(t1);
      f(t);
      return t;
    };
    const cases: [string, CommitToken[]][] = [
      [
        "fingerprint",
        [
          t0,
          mutate((t) => {
            t.fingerprint = `sha256:${"0".repeat(64)}`;
          }),
        ],
      ],
      [
        "records",
        [
          t0,
          mutate((t) => {
            t.records[0]!.t = 0.10000000000000002;
          }),
        ],
      ],
      [
        "records",
        [
          t0,
          mutate((t) => {
            t.records.push({ index: 1, t: 5 });
          }),
        ],
      ],
      ["writers", [t0, t0]],
      ["writers", [t0]],
      [
        "writers",
        [
          t0,
          mutate((t) => {
            t.writer = 2;
          }),
        ],
      ],
    ];
    for (const [reason, tokens] of cases) {
      await assert.rejects(
        owner.commit(tokens),
        (e: unknown) => e instanceof CommitError && e.reason === reason,
      );
    }
    assert.deepEqual(await bytesOf(s2), before);
    const receipt = await owner.commit([t0, t1]);
    assert.equal(receipt.commit_seq, 1);
  });

  it("§5.3 a token kept past the commit that took it is refused as spent, and a fresh round commits", async () => {
    for (const indexed of [false, true]) {
      const schema = gridSchema(indexed ? { time_mode: { indexed: { times: [10, 20] } } } : {}, true);
      const store = newStore();
      const { owner, c } = await ownerAndContributor(store, schema);
      // The contributor supplies only the partitioned variables, the owner every one.
      const write = (w: ZarrStreamWriter, r: number) => {
        const arrays =
          w === c
            ? recordArrays(schema, r, { lat: [2, 4] }, (_, p) => p)
            : recordArrays(schema, r, { lat: [0, 2] });
        return indexed ? w.writeRecordAt(r, 10 * (r + 1), arrays) : w.writeRecord(10 * (r + 1), arrays);
      };
      await write(owner, 0);
      await write(c, 0);
      const spent = await c.flush();
      await owner.commit([await owner.flush(), spent]);
      // The owner's driver lost the acknowledgement, resumed, and kept the contributor's token.
      const resumed = await ZarrStreamWriter.resume(store, { kind: "owner", nWriters: 2 }, { lat: [0, 2] });
      const before = await bytesOf(store);
      await assert.rejects(
        resumed.commit([await resumed.flush(), spent]),
        (e: unknown) =>
          e instanceof CommitError &&
          e.reason === "records" &&
          /writer 1's records are committed already \(its token is spent\)/.test(e.message),
      );
      assert.deepEqual(await bytesOf(store), before, "a refused commit changes no byte");
      await write(resumed, 1);
      await write(c, 1);
      const receipt = await resumed.commit([await resumed.flush(), await c.flush()]);
      assert.equal(receipt.commit_seq, 2);
    }
  });

  it("§5.1 owner commit always bumps commit_seq; Single flush with nothing pending is a no-op", async () => {
    const store = newStore();
    const schema = gridSchema();
    const owner = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 1 });
    const t = await owner.flush();
    assert.equal((await owner.commit([t])).commit_seq, 1);
    assert.equal((await owner.commit([await owner.flush()])).commit_seq, 2);
    const s = newStore();
    const single = await ZarrStreamWriter.create(
      s,
      gridSchema({ statics: [{ name: "area", dims: ["lat", "lon"], dtype: "float32" }] }),
      { kind: "single" },
    );
    const before = await bytesOf(s);
    const empty = await single.flush();
    assert.deepEqual([empty.records, empty.statics, empty.blobs, empty.objects], [[], [], [], []]);
    assert.deepEqual(await bytesOf(s), before);
  });

  it("§5.1 contributor close refuses unflushed data", async () => {
    const store = newStore();
    const schema = gridSchema({}, true);
    await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 2 }, { lat: [0, 2] });
    const c = await ZarrStreamWriter.join(store, { kind: "contributor", id: 1 }, { lat: [2, 4] });
    await c.writeRecord(
      0,
      recordArrays(schema, 0, { lat: [2, 4] }, (_, p) => p),
    );
    await assert.rejects(c.close(), ProtocolError);
    await c.flush();
    assert.equal(await c.close(), undefined);
  });

  it("§5.1 join refuses a missing or v1 manifest", async () => {
    await assert.rejects(ZarrStreamWriter.join(newStore(), { kind: "contributor", id: 1 }), ProtocolError);
    const v1 = await singleRun(1);
    await assert.rejects(ZarrStreamWriter.join(v1, { kind: "contributor", id: 1 }), ProtocolError);
  });

  it("§7 read-back refuses uncommitted records", async () => {
    const store = newStore();
    const schema = gridSchema();
    const w = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 1 });
    await w.writeRecord(0, recordArrays(schema, 0, {}));
    await w.writeRecord(1, recordArrays(schema, 1, {}));
    await assert.rejects(readRecord(store, "temperature", 0), NotCommitted);
    await w.commit([await w.flush()]);
    const r = await readRecord(store, "temperature", 1, { lat: [2, 4] });
    assert.deepEqual(r.shape, [2, 6]);
    assert.equal(r.data[0], 1000 + 13 + 3 * 3 + 5 * 1 + 0.25);
  });
});

describe("a second owner by mistake", () => {
  it("the owner that resumed holds the lease: the first is Fenced at its flush, writing nothing; the second's records read back", async () => {
    const store = newStore();
    const schema = gridSchema();
    const a = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 1 });
    const b = await ZarrStreamWriter.resume(store, { kind: "owner", nWriters: 1 });
    await a.writeRecord(1, recordArrays(schema, 0, {}));
    await b.writeRecord(2, recordArrays(schema, 5, {}));
    const before = await bytesOf(store);
    await assert.rejects(a.flush(), Fenced);
    assert.deepEqual(await bytesOf(store), before, "the refused flush wrote nothing");
    await assert.rejects(a.commit([]), Fenced);
    const tb = await b.flush();
    await b.commit([tb]);
    const m = (await readOutputManifest(store)) as OutputManifestV2;
    assert.equal(m.last_t, 2);
    assert.equal(m.commit_seq, 1);
    const r = await readRecord(store, "temperature", 0);
    assert.equal(r.data[0], 1000 + 13 * 5 + 3 + 5 + 0.25, "record 0 holds b's values (generator record 5)");
  });
});
