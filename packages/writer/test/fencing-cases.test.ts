// Fenced writes (packages/spec/docs/fencing.md): the nine failure cases listed in
// packages/spec/docs/history.md, each on an FsStore and on an S3Store
// (moto on loopback). Every store is reached through separate store objects, as separate machines would.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  MANIFEST_KEY,
  readArrayLayout,
  readArrayRegion,
  readOutputManifest,
  readRecord,
} from "@zarr-stream/reader";
import {
  CommitError,
  type CommitToken,
  Fenced,
  type OutputManifestV2,
  ProtocolError,
  StoreError,
  StoreExists,
  type StreamSchema,
} from "@zarr-stream/spec";
import { type Store, snapshotStore } from "@zarr-stream/store";
import { LEASE_PREFIX, leaseKey, ZarrStreamWriter } from "../src/index.js";
import { bytesOf, committedDump, gridSchema, newStore, recordArrays } from "./helpers.js";
import { observedStore } from "./observed-store.js";
import { bits, storeLocations } from "./store-locations.js";

const { s3Skip: skip, backends } = storeLocations("case");

const SCHEMA = gridSchema();
const SPLIT = gridSchema({}, true);
const OWNER1 = { kind: "owner", nWriters: 1 } as const;
const SINGLE = { kind: "single" } as const;

/** Runs `fn` and returns what it threw (undefined when it succeeded). */
async function thrown(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
    return undefined;
  } catch (err) {
    return err;
  }
}

/** Every variable of committed record `i` reads the generator values of record `r`, bitwise. */
async function assertRecordIs(store: Store, schema: StreamSchema, i: number, r: number): Promise<void> {
  const want = recordArrays(schema, r, {});
  for (const v of schema.vars) {
    const got = await readRecord(store, v.name, i);
    assert.equal(bits(got.data), bits(want[v.name]!), `${v.name} of record ${i} holds record ${r}'s values`);
  }
}

async function committedTimes(store: Store, count: number): Promise<number[]> {
  const layout = await readArrayLayout(store, "time");
  return [...((await readArrayRegion(store, "time", layout, [[0, count]])) as Float64Array)];
}

/** What another language's writer would send: a plain JSON object, parsed from text. */
function forgedToken(fields: Partial<CommitToken> & { writer: number; fingerprint: string }): CommitToken {
  return JSON.parse(
    JSON.stringify({
      schema: "earthsciio/commit-token/v1",
      region: {},
      records: [],
      statics: [],
      blobs: [],
      objects: [],
      ...fields,
    }),
  ) as CommitToken;
}

const isCommitError = (reason: string) => (e: unknown) => {
  assert.ok(e instanceof CommitError, `expected CommitError ${reason}, got ${e}`);
  assert.equal(e.reason, reason, String(e));
  return true;
};

/**
 * A store that delegates every call (the fencing calls included) and fails the next write of
 * output_manifest.json once armed: "refused" throws before the write reaches the store, "lost" lets it
 * land and then throws, as a lost acknowledgement does.
 */
function manifestFailsOnce(inner: Store): Store & { arm(mode: "refused" | "lost"): void; fired: number } {
  let armed: "refused" | "lost" | undefined;
  let fired = 0;
  const guard = async <T>(key: string, write: () => Promise<T>): Promise<T> => {
    const mode = key === MANIFEST_KEY ? armed : undefined;
    if (mode === undefined) return write();
    armed = undefined;
    fired++;
    if (mode === "lost") await write();
    throw new Error(`injected failure of the ${MANIFEST_KEY} write (${mode})`);
  };
  return {
    arm(mode: "refused" | "lost") {
      armed = mode;
    },
    get fired() {
      return fired;
    },
    url: inner.url,
    get: (k) => inner.get(k),
    getRange: (k, o, len) => inner.getRange(k, o, len),
    getSuffix: (k, len) => inner.getSuffix(k, len),
    ...(inner.getSuffixInto ? { getSuffixInto: (k, len, into) => inner.getSuffixInto!(k, len, into) } : {}),
    size: (k) => inner.size(k),
    put: (k, b) => guard(k, () => inner.put(k, b)),
    putIfAbsent: (k, b) => guard(k, () => inner.putIfAbsent(k, b)),
    delete: (k) => inner.delete(k),
    list: (p) => inner.list(p),
    getVersioned: (k) => inner.getVersioned!(k),
    version: (k) => inner.version!(k),
    putIfVersion: (k, b, v) => guard(k, () => inner.putIfVersion!(k, b, v)),
  };
}

/** The committed values of an uninterrupted Single run of records 0..count-1 with t = tOf(r). */
async function uninterruptedDump(count: number, tOf: (r: number) => number): Promise<string> {
  const store = newStore();
  const w = await ZarrStreamWriter.create(store, SCHEMA, SINGLE);
  for (let r = 0; r < count; r++) await w.writeRecord(tOf(r), recordArrays(SCHEMA, r, {}));
  await w.close();
  return committedDump(store);
}

/** Array data and metadata: every object but the manifest (created_at, base_url) and the leases. */
async function dataObjects(store: Store): Promise<Map<string, string>> {
  const snap = await snapshotStore(store);
  return new Map(
    [...snap]
      .filter(([k]) => k !== MANIFEST_KEY && !k.startsWith(LEASE_PREFIX))
      .map(([k, v]) => [k, Buffer.from(v).toString("hex")]),
  );
}

const SHAPE = /"shape":\s*\[[^\]]*\]/;

for (const [backend, location] of backends) {
  describe(`fenced writes on ${backend}`, { skip: backend === "S3Store" ? skip : undefined }, () => {
    for (const role of [OWNER1, SINGLE]) {
      it(`1. a stale ${role.kind}'s flush is Fenced and committed record 1 reads the new ${role.kind}'s values`, async () => {
        const at = location();
        const commit = async (w: ZarrStreamWriter) =>
          role.kind === "single" ? w.flush() : w.commit([await w.flush()]);
        const a = await ZarrStreamWriter.create(at(), SCHEMA, role);
        await a.writeRecord(10, recordArrays(SCHEMA, 0, {}));
        await commit(a);
        // preempted: a new owner resumes, writes record 1 and commits
        const b = await ZarrStreamWriter.resume(at(), role);
        assert.equal(b.committedCount, 1);
        await b.writeRecord(20, recordArrays(SCHEMA, 1, {}));
        await commit(b);
        const committed = await at().get(MANIFEST_KEY);
        // the zombie wakes up, writes its own record 1 and flushes / commits
        const err = await thrown(async () => {
          await a.writeRecord(25, recordArrays(SCHEMA, 99, {}));
          await commit(a);
        });
        // first what the zombie did to the store, then how it was told
        assert.deepEqual(await at().get(MANIFEST_KEY), committed, "the zombie changed no manifest");
        const store = at();
        const m = await readOutputManifest(store);
        assert.deepEqual([m.n_records, m.last_t], [2, 20]);
        await assertRecordIs(store, SCHEMA, 0, 0);
        await assertRecordIs(store, SCHEMA, 1, 1);
        assert.deepEqual(await committedTimes(store, 2), [10, 20]);
        assert.ok(err instanceof Fenced, `the zombie owner must be Fenced, got ${err}`);
        // fenced for good: every later call of the zombie is refused
        await assert.rejects(a.writeRecord(30, recordArrays(SCHEMA, 2, {})), Fenced);
        await assert.rejects(a.flush(), Fenced);
        await assert.rejects(a.close(), Fenced);
        // and the new owner goes on undisturbed
        await b.writeRecord(30, recordArrays(SCHEMA, 2, {}));
        await b.close();
        await assertRecordIs(at(), SCHEMA, 1, 1);
        await assertRecordIs(at(), SCHEMA, 2, 2);
      });
    }

    it("1b. a stale owner's flush is Fenced before it writes a byte; the new owner's commits stand", async () => {
      const at = location();
      const a = await ZarrStreamWriter.create(at(), SCHEMA, OWNER1);
      for (let r = 0; r < 2; r++) await a.writeRecord(10 * (r + 1), recordArrays(SCHEMA, r, {}));
      await a.commit([await a.flush()]);
      const b = await ZarrStreamWriter.resume(at(), OWNER1);
      // the zombie's record 2 goes to time shard 1, which nobody has written: its flush checks the lease first
      await a.writeRecord(30, recordArrays(SCHEMA, 99, {}));
      await assert.rejects(a.flush(), Fenced);
      assert.equal(await at().size("temperature/c/1/0/0"), undefined, "the zombie's flush wrote nothing");
      await b.writeRecord(30, recordArrays(SCHEMA, 2, {}));
      await b.commit([await b.flush()]);
      const store = at();
      assert.equal((await readOutputManifest(store)).n_records, 3);
      for (let r = 0; r < 3; r++) await assertRecordIs(store, SCHEMA, r, r);
      assert.deepEqual(await committedTimes(store, 3), [10, 20, 30]);
      await assert.rejects(a.writeRecord(40, recordArrays(SCHEMA, 3, {})), Fenced);
    });

    it("2. eight racing creates on one location: exactly one wins, seven get StoreExists", async () => {
      const at = location();
      const results = await Promise.allSettled(
        Array.from({ length: 8 }, () => at()).map((s) => ZarrStreamWriter.create(s, SCHEMA, SINGLE, {})),
      );
      const won = results.filter((r) => r.status === "fulfilled");
      const lost = results.filter((r) => r.status === "rejected") as PromiseRejectedResult[];
      assert.equal(won.length, 1, `${won.length} of 8 creates succeeded`);
      for (const l of lost) assert.ok(l.reason instanceof StoreExists, `a loser got ${l.reason}`);
      // the winner's store works and holds its data only
      const w = (won[0] as PromiseFulfilledResult<ZarrStreamWriter>).value;
      await w.writeRecord(10, recordArrays(SCHEMA, 0, {}));
      await w.close();
      assert.equal(await committedDump(at()), await uninterruptedDump(1, () => 10));
      assert.deepEqual(await at().list(LEASE_PREFIX), [leaseKey(0)]);
    });

    for (const [mode, first] of [
      ["refused", false],
      ["lost", false],
      ["refused", true],
      ["lost", true],
    ] as const) {
      const which = first ? "its first manifest write" : "a later manifest write";
      it(`3. a Single writer whose ${which} fails once (${mode}) loses no record`, async () => {
        const at = location();
        const store = manifestFailsOnce(at());
        const w = await ZarrStreamWriter.create(store, SCHEMA, SINGLE);
        const t = (r: number) => 10 * (r + 1);
        await w.writeRecord(t(0), recordArrays(SCHEMA, 0, {}));
        await w.writeRecord(t(1), recordArrays(SCHEMA, 1, {}));
        if (first) {
          store.arm(mode);
          await assert.rejects(w.flush(), /injected failure/);
          await w.writeRecord(t(2), recordArrays(SCHEMA, 2, {}));
        } else {
          await w.flush();
          store.arm(mode);
          await w.writeRecord(t(2), recordArrays(SCHEMA, 2, {}));
          await assert.rejects(w.flush(), /injected failure/);
        }
        assert.equal(store.fired, 1);
        await w.writeRecord(t(3), recordArrays(SCHEMA, 3, {}));
        await w.writeRecord(t(4), recordArrays(SCHEMA, 4, {}));
        await w.flush();
        const m = await readOutputManifest(at());
        assert.equal(m.n_records, 5, "the flush after the failure committed every record written so far");
        await w.writeRecord(t(5), recordArrays(SCHEMA, 5, {}));
        await w.close();
        assert.equal(await committedDump(at()), await uninterruptedDump(6, t));
      });
    }

    for (const mode of ["refused", "lost"] as const) {
      it(`3b. a Single writer's close whose manifest write fails (${mode}) does not succeed short, and can be retried`, async () => {
        const at = location();
        const store = manifestFailsOnce(at());
        const w = await ZarrStreamWriter.create(store, SCHEMA, SINGLE);
        await w.writeRecord(10, recordArrays(SCHEMA, 0, {}));
        await w.flush();
        await w.writeRecord(20, recordArrays(SCHEMA, 1, {}));
        store.arm(mode);
        await assert.rejects(w.close(), /injected failure/);
        // what was committed stays readable
        const n = (await readOutputManifest(at())).n_records;
        assert.equal(n, mode === "refused" ? 1 : 2);
        await assertRecordIs(at(), SCHEMA, 0, 0);
        // the retried close commits everything written
        await w.close();
        assert.equal(await committedDump(at()), await uninterruptedDump(2, (r) => 10 * (r + 1)));
        await assert.rejects(w.flush(), ProtocolError, "closed for good");
      });
    }

    it("4. a record blob beyond the written records is refused and the store stays readable", async () => {
      const at = location();
      const w = await ZarrStreamWriter.create(at(), SCHEMA, OWNER1);
      const before = await bytesOf(at());
      await assert.rejects(w.writeBlob({ record: 5 }, "rng", Uint8Array.of(1, 2, 3)), ProtocolError);
      assert.deepEqual(await bytesOf(at()), before, "the refused blob wrote nothing");
      await w.writeRecord(10, recordArrays(SCHEMA, 0, {}));
      // record 1 is not written yet either (record 0 is, uncommitted)
      await assert.rejects(w.writeBlob({ record: 1 }, "rng", Uint8Array.of(1)), ProtocolError);
      await w.writeBlob({ record: 0 }, "rng", Uint8Array.of(7));
      await w.commit([await w.flush()]);
      const m = (await readOutputManifest(at())) as OutputManifestV2;
      assert.deepEqual([m.n_records, m.blobs], [1, [{ scope: "record", record: 0, writer: 0, key: "rng" }]]);
      await assertRecordIs(at(), SCHEMA, 0, 0);
      // a forged token with a record blob beyond n_records: CommitError "blobs", nothing written
      const snap = await bytesOf(at());
      const forged = forgedToken({
        writer: 0,
        fingerprint: w.fingerprint,
        blobs: [{ scope: "record", record: 3, key: "rng" }],
      });
      await assert.rejects(w.commit([forged]), isCommitError("blobs"));
      assert.deepEqual(await bytesOf(at()), snap, "the refused commit wrote nothing");
      // the store is still readable and reopens
      assert.equal((await readOutputManifest(at())).n_records, 1);
      const again = await ZarrStreamWriter.resume(at(), OWNER1);
      assert.equal(again.committedCount, 1);
      await again.writeRecord(20, recordArrays(SCHEMA, 1, {}));
      await again.close();
      await assertRecordIs(at(), SCHEMA, 1, 1);
    });

    it("5. join with other region dims is refused before any write; a token with them is CommitError", async () => {
      const at = location();
      const owner = await ZarrStreamWriter.create(
        at(),
        SPLIT,
        { kind: "owner", nWriters: 2 },
        { lat: [0, 2] },
      );
      const before = await bytesOf(at());
      for (const region of [{ lon: [0, 3] }, { lat: [2, 4], lon: [0, 6] }] as const) {
        await assert.rejects(
          ZarrStreamWriter.join(at(), { kind: "contributor", id: 1 }, region as never),
          (e: unknown) => e instanceof ProtocolError && !(e instanceof StoreExists),
          JSON.stringify(region),
        );
        await assert.rejects(
          ZarrStreamWriter.resume(at(), { kind: "contributor", id: 1 }, region as never),
          ProtocolError,
        );
      }
      assert.deepEqual(await bytesOf(at()), before, "the refused joins wrote nothing (no lease either)");
      // tokens that all name [lon] tile the lon axis but are not the store's [lat]
      const manifest = await at().get(MANIFEST_KEY);
      await assert.rejects(
        owner.commit([
          forgedToken({ writer: 0, fingerprint: owner.fingerprint, region: { lon: [0, 3] } }),
          forgedToken({ writer: 1, fingerprint: owner.fingerprint, region: { lon: [3, 6] } }),
        ]),
        isCommitError("region-dims"),
      );
      // one token naming [lat, lon] beside the owner's [lat]
      const c = await ZarrStreamWriter.join(at(), { kind: "contributor", id: 1 }, { lat: [2, 4] });
      await assert.rejects(
        owner.commit([
          await owner.flush(),
          forgedToken({ writer: 1, fingerprint: owner.fingerprint, region: { lat: [2, 4], lon: [0, 6] } }),
        ]),
        isCommitError("region-dims"),
      );
      assert.deepEqual(await at().get(MANIFEST_KEY), manifest, "no refused commit wrote the manifest");
      // the real tokens still commit
      await owner.writeRecord(10, recordArrays(SPLIT, 0, { lat: [0, 2] }));
      await c.writeRecord(
        10,
        recordArrays(SPLIT, 0, { lat: [2, 4] }, (_, p) => p),
      );
      await owner.commit([await owner.flush(), await c.flush()]);
      await assertRecordIs(at(), SPLIT, 0, 0);
    });

    it("6. forged tokens with decreasing append t, or t not above last_t: CommitError records", async () => {
      const at = location();
      const w = await ZarrStreamWriter.create(at(), SCHEMA, OWNER1);
      const fp = w.fingerprint;
      let before = await bytesOf(at());
      const check = async (records: { index: number; t: number }[]) => {
        await assert.rejects(
          w.commit([forgedToken({ writer: 0, fingerprint: fp, records })]),
          isCommitError("records"),
          JSON.stringify(records),
        );
        assert.deepEqual(await bytesOf(at()), before, `${JSON.stringify(records)} wrote nothing`);
      };
      await check([
        { index: 0, t: 5 },
        { index: 1, t: 3 },
      ]);
      await check([
        { index: 0, t: 5 },
        { index: 1, t: 5 },
      ]);
      await w.writeRecord(10, recordArrays(SCHEMA, 0, {}));
      await w.commit([await w.flush()]);
      const m0 = await at().get(MANIFEST_KEY);
      before = await bytesOf(at());
      await check([{ index: 1, t: 10 }]);
      await check([{ index: 1, t: 7 }]);
      await check([
        { index: 1, t: 11 },
        { index: 2, t: 10.5 },
      ]);
      assert.deepEqual(await at().get(MANIFEST_KEY), m0);
      const m = (await readOutputManifest(at())) as OutputManifestV2;
      assert.deepEqual([m.n_records, m.last_t, m.commit_seq], [1, 10, 1]);
      // a well-formed forged continuation still commits
      await w.writeRecord(20, recordArrays(SCHEMA, 1, {}));
      await w.commit([await w.flush()]);
      assert.equal((await readOutputManifest(at())).n_records, 2);
    });

    it("7. a v1 store preempted before its first flush resumes with its schema, as if uninterrupted", async () => {
      const at = location();
      const t = (r: number) => 100 * (r + 1);
      const first = await ZarrStreamWriter.create(at(), SCHEMA, SINGLE);
      // four records of other values: two full time shards go to the store in the background, no flush
      for (let r = 0; r < 4; r++) await first.writeRecord(t(r) - 1, recordArrays(SCHEMA, 50 + r, {}));
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(await at().size(MANIFEST_KEY), undefined, "nothing was committed");
      await assert.rejects(ZarrStreamWriter.create(at(), SCHEMA, SINGLE), StoreExists);
      const noSchema = await thrown(() => ZarrStreamWriter.resume(at(), SINGLE));
      assert.ok(noSchema instanceof StoreError, `without a schema: ${noSchema}`);
      assert.match(noSchema.message, /schema/, "the error says to pass the schema");
      const w = await ZarrStreamWriter.resume(at(), SINGLE, {}, undefined, { schema: SCHEMA });
      assert.equal(w.manifestVersion, 1);
      for (let r = 0; r < 5; r++) await w.writeRecord(t(r), recordArrays(SCHEMA, r, {}));
      await w.close();
      const m = await readOutputManifest(at());
      assert.equal(m.schema, "earthsciio/output-manifest/v1");
      assert.equal(await committedDump(at()), await uninterruptedDump(5, t));
      // every data object equals the uninterrupted run's: no leftover of the preempted handle survives
      const clean = newStore();
      const u = await ZarrStreamWriter.create(clean, SCHEMA, SINGLE);
      for (let r = 0; r < 5; r++) await u.writeRecord(t(r), recordArrays(SCHEMA, r, {}));
      await u.close();
      assert.deepEqual(await dataObjects(at()), await dataObjects(clean));
      // the preempted handle, still alive, is fenced and changes nothing
      const committed = await bytesOf(at());
      await assert.rejects(first.flush(), Fenced);
      assert.deepEqual(await bytesOf(at()), committed);
    });

    it("7b. an owner whose create stopped before its manifest resumes with its schema, as if uninterrupted", async () => {
      const at = location();
      const cut = manifestFailsOnce(at());
      cut.arm("refused");
      await assert.rejects(ZarrStreamWriter.create(cut, SCHEMA, OWNER1), /injected failure/);
      assert.equal(await at().size(MANIFEST_KEY), undefined);
      await assert.rejects(ZarrStreamWriter.create(at(), SCHEMA, OWNER1), StoreExists);
      await assert.rejects(ZarrStreamWriter.resume(at(), OWNER1), StoreError);
      const w = await ZarrStreamWriter.resume(at(), OWNER1, {}, undefined, { schema: SCHEMA });
      assert.equal(w.manifestVersion, 2);
      for (let r = 0; r < 3; r++) await w.writeRecord(10 * (r + 1), recordArrays(SCHEMA, r, {}));
      await w.close();
      const clean = newStore();
      const u = await ZarrStreamWriter.create(clean, SCHEMA, OWNER1);
      for (let r = 0; r < 3; r++) await u.writeRecord(10 * (r + 1), recordArrays(SCHEMA, r, {}));
      await u.close();
      assert.equal(await committedDump(at()), await committedDump(clean));
      assert.deepEqual(await dataObjects(at()), await dataObjects(clean));
    });

    for (const role of [SINGLE, OWNER1]) {
      it(`8. resume (${role.kind}) keeps every time-axis zarr.json byte for byte except shape`, async () => {
        const at = location();
        const schema = gridSchema({
          coords: {
            lat: { values: [0, 1, 2, 3], attrs: { units: "degrees_north" } },
            time: { attrs: { units: "seconds since 2000-01-01 00:00:00", calendar: "proleptic_gregorian" } },
          },
        });
        const commit = async (w: ZarrStreamWriter) =>
          role.kind === "single" ? w.flush() : w.commit([await w.flush()]);
        const w = await ZarrStreamWriter.create(at(), schema, role);
        for (let r = 0; r < 2; r++) await w.writeRecord(10 * (r + 1), recordArrays(schema, r, {}));
        await commit(w);
        const arrays = ["time", ...schema.vars.map((v) => v.name)];
        const text = async (name: string) => new TextDecoder().decode(await at().get(`${name}/zarr.json`));
        const pre = new Map<string, string>();
        for (const a of arrays) pre.set(a, await text(a));
        const again = await ZarrStreamWriter.resume(at(), role);
        for (let r = 2; r < 5; r++) await again.writeRecord(10 * (r + 1), recordArrays(schema, r, {}));
        await commit(again);
        const timeDoc = JSON.parse(await text("time")) as {
          shape: number[];
          attributes: Record<string, unknown>;
        };
        assert.deepEqual(timeDoc.shape, [5]);
        assert.equal(timeDoc.attributes.units, "seconds since 2000-01-01 00:00:00");
        assert.equal(timeDoc.attributes.calendar, "proleptic_gregorian");
        for (const a of arrays) {
          const post = await text(a);
          const shape = SHAPE.exec(post)?.[0];
          assert.ok(shape !== undefined && shape !== SHAPE.exec(pre.get(a)!)?.[0], `${a}: the shape grew`);
          assert.equal(post, pre.get(a)!.replace(SHAPE, shape), `${a}/zarr.json differs beyond its shape`);
        }
        await again.close();
        // a resume that truncates (t <= 30 kept) rewrites the shapes too, and keeps the rest
        const cut = await ZarrStreamWriter.resume(at(), role, {}, 30);
        assert.equal(cut.committedCount, 3);
        for (const a of arrays) {
          const post = await text(a);
          assert.deepEqual(
            (JSON.parse(post) as { shape: number[] }).shape[0],
            3,
            `${a}: shape after truncation`,
          );
          assert.equal(
            post,
            pre.get(a)!.replace(SHAPE, SHAPE.exec(post)![0]),
            `${a}/zarr.json after truncation`,
          );
        }
      });
    }

    it("9. indexed mode releases written time shards: the next write into one reloads it", async () => {
      const at = location();
      const times = [0, 60, 120, 180, 240, 300];
      const schema = gridSchema({ time_mode: { indexed: { times } } }, true);
      const reads: string[] = [];
      const spy = observedStore(at(), { read: (k) => reads.push(k) });
      const owner = await ZarrStreamWriter.create(
        spy,
        schema,
        { kind: "owner", nWriters: 2 },
        { lat: [0, 2] },
      );
      const cReads: string[] = [];
      const cSpy = observedStore(at(), { read: (k) => cReads.push(k) });
      const c = await ZarrStreamWriter.join(cSpy, { kind: "contributor", id: 1 }, { lat: [2, 4] });
      const part = (r: number, region: { lat: [number, number] }, owns: boolean) =>
        recordArrays(schema, r, region, (_, p) => p || owns);
      // record 0 of time shard 0, committed: the owner's buffers go at commit, the contributor's at flush
      await owner.writeRecordAt(0, times[0]!, part(0, { lat: [0, 2] }, true));
      await c.writeRecordAt(0, times[0]!, part(0, { lat: [2, 4] }, false));
      await owner.commit([await owner.flush(), await c.flush()]);
      reads.length = 0;
      cReads.length = 0;
      // record 1 of the same time shard: both reload their shards of it (record 0 is kept)
      await owner.writeRecordAt(1, times[1]!, part(1, { lat: [0, 2] }, true));
      await c.writeRecordAt(1, times[1]!, part(1, { lat: [2, 4] }, false));
      assert.ok(reads.includes("temperature/c/0/0/0"), `owner reloaded time shard 0: ${reads}`);
      assert.ok(reads.includes("temperature/c/0/0/1"), `owner reloaded time shard 0: ${reads}`);
      assert.ok(cReads.includes("temperature/c/0/1/0"), `contributor reloaded time shard 0: ${cReads}`);
      assert.ok(!cReads.includes("temperature/c/0/0/0"), "a contributor reads only its own shards");
      // a contributor releases at flush, before any commit: record 3 of time shard 1, flushed, then record 2
      await c.writeRecordAt(3, times[3]!, part(3, { lat: [2, 4] }, false));
      const t1 = await c.flush();
      cReads.length = 0;
      await c.writeRecordAt(2, times[2]!, part(2, { lat: [2, 4] }, false));
      assert.ok(cReads.includes("temperature/c/1/1/0"), `contributor reloaded time shard 1: ${cReads}`);
      await owner.writeRecordAt(3, times[3]!, part(3, { lat: [0, 2] }, true));
      await owner.commit([await owner.flush(), t1]);
      await owner.writeRecordAt(2, times[2]!, part(2, { lat: [0, 2] }, true));
      await owner.commit([await owner.flush(), await c.flush()]);
      // every record reads back whole: nothing was lost by the releases and reloads
      for (let i = 0; i < 4; i++) await assertRecordIs(at(), schema, i, i);
    });
  });
}
