import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MANIFEST_KEY, readOutputManifest } from "@zarr-stream/reader";
import { type OutputManifestV2, ProtocolError } from "@zarr-stream/spec";
import { ZarrStreamWriter } from "../src/index.js";
import { LEASE_PREFIX, leaseKey } from "../src/writer-lease.js";
import { committedDump, gridSchema, newStore, ownerAndContributor, recordArrays } from "./helpers.js";
import { observedStore } from "./observed-store.js";

const t = (r: number) => 100 * (r + 1);

async function uninterrupted(n: number) {
  const store = newStore();
  const schema = gridSchema();
  const w = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 1 });
  for (let r = 0; r < n; r++) await w.writeRecord(t(r), recordArrays(schema, r, {}));
  await w.close();
  return store;
}

/** A store whose committed count ends inside a time shard (3 of shard size 2), plus uncommitted leftovers. */
async function interrupted() {
  const store = newStore();
  const schema = gridSchema();
  const w = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 1 });
  for (let r = 0; r < 3; r++) await w.writeRecord(t(r), recordArrays(schema, r, {}));
  await w.commit([await w.flush()]);
  // uncommitted work of the dropped handle: record 3 written and flushed, never committed
  await w.writeRecord(t(3), recordArrays(schema, 99, {}));
  await w.flush();
  return { store, schema };
}

describe("§7 resume", () => {
  it("§10 partial-shard-resume: flush mid-shard, drop, resume, continue = uninterrupted, bitwise", async () => {
    const { store, schema } = await interrupted();
    const w = await ZarrStreamWriter.resume(store, { kind: "owner", nWriters: 1 });
    for (let r = 3; r < 6; r++) await w.writeRecord(t(r), recordArrays(schema, r, {}));
    await w.close();
    assert.equal(await committedDump(store), await committedDump(await uninterrupted(6)));
  });

  it("§5.4 resume really reloads the open time shard (without it record 2 would become fill)", async () => {
    const { store, schema } = await interrupted();
    const reads: string[] = [];
    const spy = observedStore(store, { read: (k) => reads.push(k) });
    const w = await ZarrStreamWriter.resume(spy, { kind: "owner", nWriters: 1 });
    assert.ok(reads.includes("temperature/c/1/0/0"), `reloaded: ${reads}`);
    assert.ok(reads.includes("time/c/1"));
    await w.writeRecord(t(3), recordArrays(schema, 3, {}));
    await w.close();
    // record 2 lives in the reloaded, rewritten shard 1 and must survive
    const dump = JSON.parse(await committedDump(store));
    const rec2 = dump.find((x: unknown[]) => x[0] === 2 && x[1] === "temperature");
    assert.equal(Number(rec2[3][0]), 1000 + 13 * 2 + 3 + 5 + 0.25);
  });

  it("§10 truncate-on-resume: t <= at kept, shapes + manifest rewritten, commit_seq bumped", async () => {
    const store = newStore();
    const schema = gridSchema();
    const w = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 1 });
    for (let r = 0; r < 5; r++) await w.writeRecord(t(r), recordArrays(schema, r, {}));
    await w.close();
    const before = (await readOutputManifest(store)) as OutputManifestV2;
    const again = await ZarrStreamWriter.resume(store, { kind: "owner", nWriters: 1 }, {}, t(2));
    const m = (await readOutputManifest(store)) as OutputManifestV2;
    assert.equal(m.n_records, 3);
    assert.equal(m.commit_seq, before.commit_seq + 1);
    assert.equal(m.last_t, t(2));
    assert.deepEqual(m.time_shards, [
      { index: 0, t_start: t(0), t_end: t(1), n: 2 },
      { index: 1, t_start: t(2), t_end: t(2), n: 1 },
    ]);
    // re-emitting the dropped records reproduces the uninterrupted run (idempotent truncate-and-rewrite)
    for (let r = 3; r < 5; r++) await again.writeRecord(t(r), recordArrays(schema, r, {}));
    await again.close();
    assert.equal(await committedDump(store), await committedDump(await uninterrupted(5)));
  });

  it("resume with nothing to drop takes its lease, restamps the manifest and rewrites the time-axis metadata unchanged but for a newline, nothing else", async () => {
    const store = await uninterrupted(4);
    const untouched = (k: string) => !k.startsWith(LEASE_PREFIX) && k !== MANIFEST_KEY;
    const keys = (await store.list("")).filter(untouched);
    const bytes = await Promise.all(keys.map((k) => store.get(k)));
    const manifest = (await readOutputManifest(store)) as OutputManifestV2;
    const { version } = (await store.getVersioned(MANIFEST_KEY))!;
    const lease = await store.get(leaseKey(0));
    await ZarrStreamWriter.resume(store, { kind: "owner", nWriters: 1 }, {}, 1e9);
    const after = await Promise.all(keys.map((k) => store.get(k)));
    // The root and every array with a time axis are rewritten so that their versions change (a zombie
    // owner's shape write on the old version is refused, fencing.md); each reads as the same document.
    const rewritten = keys.filter((_, i) => !Buffer.from(after[i]!).equals(bytes[i]!));
    assert.deepEqual(rewritten, [
      "temperature/zarr.json",
      "time/zarr.json",
      "total/zarr.json",
      "zarr.json",
      "zonal/zarr.json",
    ]);
    for (const k of rewritten) {
      const i = keys.indexOf(k);
      const text = (b: Uint8Array | undefined) => new TextDecoder().decode(b);
      assert.equal(text(after[i]), `${text(bytes[i])}\n`, k);
    }
    assert.deepEqual(
      (await store.list("")).filter((k) => !keys.includes(k)),
      [leaseKey(0), MANIFEST_KEY].sort(),
    );
    assert.notDeepEqual(await store.get(leaseKey(0)), lease, "the lease was taken anew");
    const m = (await readOutputManifest(store)) as OutputManifestV2;
    assert.notEqual((await store.getVersioned(MANIFEST_KEY))!.version, version, "the takeover rewrote it");
    assert.deepEqual({ ...m, created_at: "" }, { ...manifest, created_at: "" });
  });

  it("indexed resume refuses at; contributors compute the same truncated count", async () => {
    const s = newStore();
    await ZarrStreamWriter.create(s, gridSchema({ time_mode: { indexed: { times: [1, 2] } } }), {
      kind: "owner",
      nWriters: 1,
    });
    await assert.rejects(ZarrStreamWriter.resume(s, { kind: "owner", nWriters: 1 }, {}, 1), ProtocolError);

    const store = newStore();
    const schema = gridSchema({}, true);
    const { owner, c } = await ownerAndContributor(store, schema);
    for (let r = 0; r < 5; r++) {
      await owner.writeRecord(t(r), recordArrays(schema, r, { lat: [0, 2] }));
      await c.writeRecord(
        t(r),
        recordArrays(schema, r, { lat: [2, 4] }, (_, p) => p),
      );
    }
    await owner.commit([await owner.flush(), await c.flush()]);
    // both crash; the contributor resumes first, then the owner
    const c2 = await ZarrStreamWriter.resume(store, { kind: "contributor", id: 1 }, { lat: [2, 4] }, t(2));
    const o2 = await ZarrStreamWriter.resume(store, { kind: "owner", nWriters: 2 }, { lat: [0, 2] }, t(2));
    assert.equal(c2.committedCount, 3);
    assert.equal(o2.committedCount, 3);
    assert.equal(await o2.writeRecord(t(3), recordArrays(schema, 3, { lat: [0, 2] })), 3);
    assert.equal(
      await c2.writeRecord(
        t(3),
        recordArrays(schema, 3, { lat: [2, 4] }, (_, p) => p),
      ),
      3,
    );
    const r = await o2.commit([await o2.flush(), await c2.flush()]);
    assert.equal(r.n_committed, 4);
  });

  it("§8.1 resuming keeps the manifest version", async () => {
    const store = newStore();
    const schema = gridSchema();
    const w = await ZarrStreamWriter.create(store, schema, { kind: "single" });
    await w.writeRecord(1, recordArrays(schema, 0, {}));
    await w.close();
    const again = await ZarrStreamWriter.resume(store, { kind: "single" });
    await again.writeRecord(2, recordArrays(schema, 1, {}));
    await again.close();
    const m = await readOutputManifest(store);
    assert.equal(m.schema, "earthsciio/output-manifest/v1");
    assert.equal(m.n_records, 2);
    await assert.rejects(ZarrStreamWriter.resume(store, { kind: "owner", nWriters: 1 }), ProtocolError);
  });
});
