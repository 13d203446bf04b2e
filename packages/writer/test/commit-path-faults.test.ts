// Failed store calls, late tokens and racing resumes on the commit path: each case once made a committed
// record read other bytes than were written, or left a manifest naming a page that is not there.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MANIFEST_KEY, readOutputManifest, readRecord, readStatic } from "@zarr-stream/reader";
import {
  MANIFEST_PAGE_PREFIX,
  MANIFEST_PAGE_SIZE,
  type OutputManifestV2,
  ProtocolError,
  type StreamSchema,
} from "@zarr-stream/spec";
import { type FencingStore, MemoryStore } from "@zarr-stream/store";
import { leaseKey, ZarrStreamWriter } from "../src/index.js";
import { FaultStore, InjectedFault } from "./fault-store.js";
import { gridSchema, recordArrays, staticArray } from "./helpers.js";
import { bits } from "./store-locations.js";

const P = MANIFEST_PAGE_SIZE;

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

/** A store whose next read of `key` waits, once `hold()` is called, until `release()`. */
function readGate(inner: FencingStore, key: string) {
  let holding = false;
  let onReached = () => {};
  let onRelease = () => {};
  const reached = new Promise<void>((r) => {
    onReached = r;
  });
  const released = new Promise<void>((r) => {
    onRelease = r;
  });
  const store: FencingStore = {
    url: inner.url,
    get: (k) => inner.get(k),
    getRange: (k, o, len) => inner.getRange(k, o, len),
    getSuffix: (k, len) => inner.getSuffix(k, len),
    size: (k) => inner.size(k),
    put: (k, b) => inner.put(k, b),
    putIfAbsent: (k, b) => inner.putIfAbsent(k, b),
    delete: (k) => inner.delete(k),
    list: (p) => inner.list(p),
    getVersioned: async (k) => {
      if (holding && k === key) {
        holding = false;
        onReached();
        await released;
      }
      return inner.getVersioned(k);
    },
    version: (k) => inner.version(k),
    putIfVersion: (k, b, v) => inner.putIfVersion(k, b, v),
  };
  return {
    store,
    reached,
    hold() {
      holding = true;
    },
    release: () => onRelease(),
  };
}

describe("manifest pages across a takeover", () => {
  it("a page collected by the handle a resume took over from is written again when referred to again", async () => {
    const schema: StreamSchema = {
      dims: [
        ["time", 0],
        ["x", 2],
      ],
      time_dim: "time",
      time_mode: "append",
      vars: [{ name: "v", dims: ["time", "x"], dtype: "float32" }],
      statics: [],
      chunk_shape: { time: 1, x: 2 },
      shard_shape: { time: 1, x: 2 },
      profile: "diagnostic",
    };
    const rec = (r: number) => ({ v: Float32Array.of(r, -r) });
    const owner = { kind: "owner", nWriters: 1 } as const;
    const store = new MemoryStore();
    const n = P + 20;
    const first = await ZarrStreamWriter.create(store, schema, owner, {}, { manifestPages: true });
    for (let r = 0; r < n; r++) await first.writeRecord(r, rec(r));
    await first.commit([await first.flush()]);
    const sealed = (JSON.parse(new TextDecoder().decode(await store.get(MANIFEST_KEY))) as OutputManifestV2)
      .time_shard_pages![0]!.sha256;
    const pageKey = `${MANIFEST_PAGE_PREFIX}time_shards/${sealed}.json`;
    // A has read the manifest (and its page) and is about to take the lease ...
    const gate = readGate(store, leaseKey(0));
    gate.hold();
    const opening = ZarrStreamWriter.resume(gate.store, owner);
    await gate.reached;
    // ... when B resumes before it, truncating into the sealed page, and commits twice: the page goes.
    const b = await ZarrStreamWriter.resume(store, owner, {}, 99);
    for (const r of [100, 101]) {
      await b.writeRecord(r, rec(r));
      await b.commit([await b.flush()]);
    }
    assert.equal(await store.size(pageKey), undefined, "B collected the page it no longer refers to");
    gate.release();
    const a = await opening;
    // A goes on from B's commits and writes the same records again: the same page is sealed again.
    assert.equal(a.committedCount, 102);
    for (let r = 102; r < n; r++) await a.writeRecord(r, rec(r));
    await a.commit([await a.flush()]);
    assert.ok((await store.size(pageKey)) !== undefined, "the page the manifest refers to is there");
    const m = (await readOutputManifest(store)) as OutputManifestV2;
    assert.equal(m.n_records, n);
  });
});

/** A store that, once armed, carries out the next manifest write and then throws as if it had failed. */
function losingManifestAck(inner: FencingStore) {
  let armed = false;
  const store: FencingStore = {
    url: inner.url,
    get: (k) => inner.get(k),
    getRange: (k, o, len) => inner.getRange(k, o, len),
    getSuffix: (k, len) => inner.getSuffix(k, len),
    size: (k) => inner.size(k),
    put: (k, b) => inner.put(k, b),
    putIfAbsent: (k, b) => inner.putIfAbsent(k, b),
    delete: (k) => inner.delete(k),
    list: (p) => inner.list(p),
    getVersioned: (k) => inner.getVersioned(k),
    version: (k) => inner.version(k),
    putIfVersion: async (k, b, v) => {
      const version = await inner.putIfVersion(k, b, v);
      if (armed && k === MANIFEST_KEY) {
        armed = false;
        throw new InjectedFault(`injected lost acknowledgement of ${k}`, k);
      }
      return version;
    },
  };
  return {
    store,
    arm() {
      armed = true;
    },
  };
}

describe("a rewrite while a manifest write's outcome is unknown", () => {
  const times = [10, 20, 30, 40];
  const schema = gridSchema({ time_mode: { indexed: { times } }, statics: [] });
  // Other bytes than record 0's: the generator's record 3.
  const other = () => recordArrays(schema, 3, {});

  it("is refused when that write committed the record: the committed bytes stay", async () => {
    const inner = new MemoryStore();
    const faulty = losingManifestAck(inner);
    const w = await ZarrStreamWriter.create(faulty.store, schema, { kind: "single" });
    await w.writeRecordAt(0, 10, recordArrays(schema, 0, {}));
    faulty.arm();
    await assert.rejects(w.flush(), InjectedFault);
    // The flush's commit landed: record 0 is committed, and the rewrite rule refuses writing it again.
    await assert.rejects(w.writeRecordAt(0, 10, other()), ProtocolError);
    await w.close();
    for (const v of schema.vars) {
      const { read, written } = await recordBits(inner, schema, v.name, 0);
      assert.equal(read, written, `record 0 of ${v.name}`);
    }
  });

  it("is refused for a static that write committed: the committed bytes stay", async () => {
    const withStatic = gridSchema({ statics: [{ name: "area", dims: ["lat", "lon"], dtype: "float64" }] });
    const inner = new MemoryStore();
    const faulty = losingManifestAck(inner);
    const w = await ZarrStreamWriter.create(faulty.store, withStatic, { kind: "single" });
    const area = staticArray(withStatic, "area", {});
    await w.writeStatic("area", area);
    faulty.arm();
    await assert.rejects(w.flush(), InjectedFault);
    await assert.rejects(w.writeStatic("area", new Float64Array(area.length).fill(7)), ProtocolError);
    await w.close();
    assert.equal(bits((await readStatic(inner, "area")).data), bits(area));
  });
});

describe("a manifest write refused after it landed (the store's own retry), whose re-read then fails", () => {
  it("is settled by the retried flush instead of fencing the handle", async () => {
    const inner = new MemoryStore();
    let armed = false;
    let failRead = false;
    // The write lands and the store answers as its refused retry would; the read that explains it fails.
    const store: FencingStore = {
      url: inner.url,
      get: (k) => inner.get(k),
      getRange: (k, o, len) => inner.getRange(k, o, len),
      getSuffix: (k, len) => inner.getSuffix(k, len),
      size: (k) => inner.size(k),
      put: (k, b) => inner.put(k, b),
      putIfAbsent: (k, b) => inner.putIfAbsent(k, b),
      delete: (k) => inner.delete(k),
      list: (p) => inner.list(p),
      getVersioned: async (k) => {
        if (failRead && k === MANIFEST_KEY) {
          failRead = false;
          throw new InjectedFault(`injected failure of getVersioned ${k}`, k);
        }
        return inner.getVersioned(k);
      },
      version: (k) => inner.version(k),
      putIfVersion: async (k, b, v) => {
        const version = await inner.putIfVersion(k, b, v);
        if (!armed || k !== MANIFEST_KEY) return version;
        armed = false;
        failRead = true;
        return undefined;
      },
    };
    const schema = gridSchema();
    const w = await ZarrStreamWriter.create(store, schema, { kind: "single" });
    for (const r of [0, 1, 2]) await w.writeRecord(10 * (r + 1), recordArrays(schema, r, {}));
    armed = true;
    await assert.rejects(w.flush(), InjectedFault);
    await w.flush();
    await w.writeRecord(40, recordArrays(schema, 3, {}));
    await w.close();
    assert.equal((await readOutputManifest(inner)).n_records, 4);
    for (const r of [0, 1, 2, 3]) {
      const { read, written } = await recordBits(inner, schema, "temperature", r);
      assert.equal(read, written, `record ${r}`);
    }
  });
});

describe("an owner's commit whose manifest write lost its acknowledgement", () => {
  it("retried after a flush has settled it, returns that commit's receipt", async () => {
    const inner = new MemoryStore();
    const faulty = losingManifestAck(inner);
    const schema = gridSchema();
    const w = await ZarrStreamWriter.create(faulty.store, schema, { kind: "owner", nWriters: 1 });
    for (const r of [0, 1, 2]) await w.writeRecord(10 * (r + 1), recordArrays(schema, r, {}));
    const token = await w.flush();
    faulty.arm();
    await assert.rejects(w.commit([token]), InjectedFault);
    // The caller starts the next round before it retries: the flush settles the write (it landed).
    await w.writeRecord(40, recordArrays(schema, 3, {}));
    const next = await w.flush();
    const receipt = await w.commit([token]);
    assert.equal(receipt.n_committed, 3);
    assert.equal((await w.commit([next])).n_committed, 4);
    await w.close();
  });
});

describe("a lease holder meeting a dropped handle's leftover while a manifest write's outcome is unknown", () => {
  it("overwrites it: its own commit that landed is not another owner's", async () => {
    const inner = new MemoryStore();
    const faulty = losingManifestAck(inner);
    const schema = gridSchema();
    const owner = { kind: "owner", nWriters: 1 } as const;
    // A handle writes records 0-3 (two time shards) and is dropped before it commits them.
    const dropped = await ZarrStreamWriter.create(inner, schema, owner);
    for (const r of [0, 1, 2, 3]) await dropped.writeRecord(10 * (r + 1), recordArrays(schema, r + 100, {}));
    await dropped.flush();
    const w = await ZarrStreamWriter.resume(faulty.store, owner);
    for (const r of [0, 1]) await w.writeRecord(10 * (r + 1), recordArrays(schema, r, {}));
    const token = await w.flush();
    faulty.arm();
    await assert.rejects(w.commit([token]), InjectedFault);
    // Time shard 1 fills and is written over the dropped handle's leftover.
    for (const r of [2, 3]) await w.writeRecord(10 * (r + 1), recordArrays(schema, r, {}));
    await w.writeRecord(50, recordArrays(schema, 4, {}));
    await w.commit([token]);
    await w.close();
    for (const r of [0, 1, 2, 3, 4]) {
      const { read, written } = await recordBits(inner, schema, "temperature", r);
      assert.equal(read, written, `record ${r}`);
    }
  });
});

describe("a contributor meeting a dropped handle's leftover after a re-read of the manifest", () => {
  it("overwrites it: the owner's commit of a token it posted before the re-read is not another writer's", async () => {
    const schema = gridSchema({ statics: [{ name: "area", dims: ["lat", "lon"], dtype: "float32" }] });
    const store = new MemoryStore();
    const mine = { lat: [0, 2] as [number, number] };
    const theirs = { lat: [2, 4] as [number, number] };
    const contributed = (_: string, partitioned: boolean) => partitioned;
    const contributor = { kind: "contributor", id: 1 } as const;
    const owner = await ZarrStreamWriter.create(store, schema, { kind: "owner", nWriters: 2 }, mine);
    // A handle of writer 1 writes records 0-3 (two time shards) and is dropped before any commit.
    const dropped = await ZarrStreamWriter.join(store, contributor, theirs);
    for (const r of [0, 1, 2, 3])
      await dropped.writeRecord(10 * (r + 1), recordArrays(schema, r + 100, theirs, contributed));
    await dropped.flush();
    const c = await ZarrStreamWriter.resume(store, contributor, theirs);
    // The static is committed, then invalidated: the contributor's view still holds it committed.
    await owner.writeStatic("area", staticArray(schema, "area", mine));
    await c.writeStatic("area", staticArray(schema, "area", theirs));
    await owner.commit([await owner.flush(), await c.flush()]);
    await owner.invalidateStatics(["area"]);
    // The contributor posts records 0 and 1; before the owner commits them, rewriting the static makes it
    // re-read the manifest, which does not commit them yet.
    for (const r of [0, 1]) await c.writeRecord(10 * (r + 1), recordArrays(schema, r, theirs, contributed));
    const late = await c.flush();
    await c.writeStatic("area", staticArray(schema, "area", theirs));
    for (const r of [0, 1]) await owner.writeRecord(10 * (r + 1), recordArrays(schema, r, mine));
    await owner.commit([await owner.flush(), late]);
    // Time shard 1 fills and is written over the dropped handle's leftover.
    for (const r of [2, 3]) await c.writeRecord(10 * (r + 1), recordArrays(schema, r, theirs, contributed));
    const next = await c.flush();
    for (const r of [2, 3]) await owner.writeRecord(10 * (r + 1), recordArrays(schema, r, mine));
    await owner.writeStatic("area", staticArray(schema, "area", mine));
    await owner.commit([await owner.flush(), next]);
    await owner.close([await c.flush()]);
    await c.close();
    for (const r of [0, 1, 2, 3]) {
      const { read, written } = await recordBits(store, schema, "temperature", r, theirs);
      assert.equal(read, written, `record ${r}`);
    }
    assert.equal(
      bits((await readStatic(store, "area", theirs)).data),
      bits(staticArray(schema, "area", theirs)),
    );
  });
});
