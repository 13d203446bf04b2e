// The manifest's form (packages/spec/docs/manifest-pages.md): the seed's at any size unless pages are
// asked for, the paged form under its own label from create on, kept by join and resume, changed only by
// setManifestPages (`zstream manifest pages on|off`), compare-and-swap.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MANIFEST_KEY, readOutputManifest, readRecord } from "@zarr-stream/reader";
import {
  CommitError,
  MANIFEST_PAGE_PREFIX,
  MANIFEST_PAGE_SIZE,
  ManifestChanged,
  OUTPUT_MANIFEST_V2,
  OUTPUT_MANIFEST_V2_PAGED,
  type OutputManifestV2,
  ProtocolError,
  SchemaError,
  type StreamSchema,
} from "@zarr-stream/spec";
import { MemoryStore } from "@zarr-stream/store";
import { StreamRun, setManifestPages, ZarrStreamWriter } from "../src/index.js";

const P = MANIFEST_PAGE_SIZE;
const N = P + 88;
const decode = (b: Uint8Array | undefined) => new TextDecoder().decode(b);
const stored = async (store: MemoryStore) =>
  JSON.parse(decode(await store.get(MANIFEST_KEY))) as OutputManifestV2 & Record<string, unknown>;
const pageKeys = (store: MemoryStore) => store.list(MANIFEST_PAGE_PREFIX);

function tinySchema(timeMode: StreamSchema["time_mode"]): StreamSchema {
  return {
    dims: [
      ["time", 0],
      ["x", 2],
    ],
    time_dim: "time",
    time_mode: timeMode,
    vars: [{ name: "v", dims: ["time", "x"], dtype: "float32" }],
    statics: [],
    chunk_shape: { time: 1, x: 2 },
    shard_shape: { time: 1, x: 2 },
    profile: "diagnostic",
  };
}

const rec = (r: number) => ({ v: Float32Array.of(r, -r) });
const owner = { kind: "owner", nWriters: 1 } as const;
const times = Array.from({ length: N }, (_, i) => i * 10);

/** An owner's append store of N one-record time shards, and an indexed one with every record committed. */
async function stores(opts: { manifestPages?: boolean } = {}) {
  const append = new MemoryStore();
  const a = await ZarrStreamWriter.create(append, tinySchema("append"), owner, {}, opts);
  for (let r = 0; r < N; r++) await a.writeRecord(r, rec(r));
  await a.commit([await a.flush()]);
  await a.close();
  const indexed = new MemoryStore();
  const b = await ZarrStreamWriter.create(indexed, tinySchema({ indexed: { times } }), owner, {}, opts);
  for (let r = 0; r < N; r++) await b.writeRecordAt(r, times[r]!, rec(r));
  await b.commit([await b.flush()]);
  await b.close();
  return { append, indexed };
}

describe("the manifest's form", () => {
  it("is the seed's by default at any size: every list inline, no pages, the seed's label", async () => {
    const { append, indexed } = await stores();
    for (const store of [append, indexed]) {
      const m = await stored(store);
      assert.equal(m.schema, OUTPUT_MANIFEST_V2);
      assert.equal(m.n_records, N);
      assert.equal(m.time_shard_pages, undefined);
      assert.deepEqual(await pageKeys(store), []);
    }
    assert.equal((await stored(append)).time_shards.length, N);
    assert.equal((await stored(indexed)).records!.entries.length, N);
    assert.equal((await stored(indexed)).time_shards.length, N);
  });

  it("is paged from create on when asked, under its own label, even while every list fits inline", async () => {
    const store = new MemoryStore();
    const w = await ZarrStreamWriter.create(store, tinySchema("append"), owner, {}, { manifestPages: true });
    assert.equal(w.manifestPages, true);
    assert.equal((await stored(store)).schema, OUTPUT_MANIFEST_V2_PAGED);
    const { append, indexed } = await stores({ manifestPages: true });
    assert.equal((await stored(append)).time_shard_pages?.length, 1);
    assert.equal((await stored(indexed)).records!.pages?.length, 2);
    for (const s of [append, indexed]) {
      const m = (await readOutputManifest(s)) as OutputManifestV2;
      assert.equal(m.schema, OUTPUT_MANIFEST_V2_PAGED, "the label stays on the resolved manifest");
      assert.equal(m.time_shards.length, N);
    }
  });

  it("is kept by resume and join; an explicit option that contradicts it is refused before any write", async () => {
    const plain = new MemoryStore();
    await ZarrStreamWriter.create(plain, tinySchema("append"), { kind: "owner", nWriters: 2 });
    const paged = new MemoryStore();
    await ZarrStreamWriter.create(
      paged,
      tinySchema("append"),
      { kind: "owner", nWriters: 2 },
      {},
      {
        manifestPages: true,
      },
    );
    for (const [store, form] of [
      [plain, false],
      [paged, true],
    ] as const) {
      const before = await store.get(MANIFEST_KEY);
      const contradicting = { manifestPages: !form };
      await assert.rejects(
        ZarrStreamWriter.resume(store, { kind: "owner", nWriters: 2 }, {}, undefined, contradicting),
        (e) => e instanceof ProtocolError && /zstream manifest pages/.test(e.message),
      );
      await assert.rejects(
        ZarrStreamWriter.join(store, { kind: "contributor", id: 1 }, {}, contradicting),
        ProtocolError,
      );
      assert.deepEqual(await store.get(MANIFEST_KEY), before, "a refused open writes nothing");
      const c = await ZarrStreamWriter.join(store, { kind: "contributor", id: 1 });
      assert.equal(c.manifestPages, form);
      const o = await ZarrStreamWriter.resume(store, { kind: "owner", nWriters: 2 }, {}, undefined, {
        manifestPages: form,
      });
      assert.equal(o.manifestPages, form);
      assert.equal((await stored(store)).schema, form ? OUTPUT_MANIFEST_V2_PAGED : OUTPUT_MANIFEST_V2);
    }
  });

  it("has no paged variant in v1: a Single append writer without statics refuses manifestPages", async () => {
    await assert.rejects(
      ZarrStreamWriter.create(
        new MemoryStore(),
        tinySchema("append"),
        { kind: "single" },
        {},
        {
          manifestPages: true,
        },
      ),
      (e) => e instanceof ProtocolError && /v1/.test(e.message),
    );
    await assert.rejects(
      ZarrStreamWriter.create(
        new MemoryStore(),
        tinySchema("append"),
        owner,
        {},
        {
          manifestPages: "yes" as unknown as boolean,
        },
      ),
      SchemaError,
    );
    const v1 = new MemoryStore();
    const w = await ZarrStreamWriter.create(v1, tinySchema("append"), { kind: "single" });
    await w.writeRecord(0, rec(0));
    await w.close();
    await assert.rejects(setManifestPages(v1, true), ProtocolError);
  });
});

describe("setManifestPages", () => {
  it("switches either way with the same committed state and commit_seq; off gives back the seed's bytes", async () => {
    const { append, indexed } = await stores();
    for (const store of [append, indexed]) {
      const seedBytes = decode(await store.get(MANIFEST_KEY));
      const seed = (await readOutputManifest(store)) as OutputManifestV2;
      const on = await setManifestPages(store, true);
      assert.equal(on.changed, true);
      assert.equal(on.to, OUTPUT_MANIFEST_V2_PAGED);
      assert.ok(on.pagesWritten >= 1);
      const paged = (await readOutputManifest(store)) as OutputManifestV2;
      assert.deepEqual({ ...paged, schema: OUTPUT_MANIFEST_V2 }, seed);
      assert.equal((await stored(store)).commit_seq, seed.commit_seq);
      assert.ok((await store.get(MANIFEST_KEY))!.byteLength < seedBytes.length / 2);
      assert.equal((await setManifestPages(store, true)).changed, false, "on again is a no-op");
      const off = await setManifestPages(store, false);
      assert.equal(off.changed, true);
      assert.equal(off.pagesWritten, 0);
      assert.equal(decode(await store.get(MANIFEST_KEY)), seedBytes);
      // The pages stay, unreferenced, for a reader that still holds the paged manifest.
      assert.ok((await pageKeys(store)).length >= 1);
    }
  });

  it("a store switched goes on in its new form: resume commits paged, and reads agree", async () => {
    const { indexed } = await stores();
    await setManifestPages(indexed, true);
    const w = await ZarrStreamWriter.resume(indexed, owner);
    assert.equal(w.manifestPages, true);
    await w.invalidate([3]);
    await w.writeRecordAt(3, times[3]!, rec(1000));
    await w.commit([await w.flush()]);
    const m = await stored(indexed);
    assert.equal(m.schema, OUTPUT_MANIFEST_V2_PAGED);
    assert.ok(m.records!.pages !== undefined);
    assert.deepEqual([...((await readRecord(indexed, "v", 3)).data as Float32Array)], [1000, -1000]);
    await w.close();
  });

  it("refuses with ManifestChanged when the manifest changed after it was read, writing nothing", async () => {
    const { append } = await stores();
    // Another process writes the manifest between the form change's read and its compare-and-swap.
    const other = new TextEncoder().encode(
      decode(await append.get(MANIFEST_KEY)).replace(
        /"commit_seq": (\d+)/,
        (_, n) => `"commit_seq": ${Number(n) + 1}`,
      ),
    );
    const putIfVersion = append.putIfVersion.bind(append);
    let raced = false;
    append.putIfVersion = async (key, bytes, expected) => {
      if (key === MANIFEST_KEY && !raced) {
        raced = true;
        await putIfVersion(key, other, expected);
      }
      return putIfVersion(key, bytes, expected);
    };
    await assert.rejects(
      setManifestPages(append, true),
      (e) => e instanceof ManifestChanged && e.key === MANIFEST_KEY,
    );
    assert.equal(decode(await append.get(MANIFEST_KEY)), decode(other), "the other process's manifest stays");
  });

  it("relabels a paged manifest stored under the seed's label, which readers refuse, then switches", async () => {
    const { indexed } = await stores({ manifestPages: true });
    const resolved = (await readOutputManifest(indexed)) as OutputManifestV2;
    // What zarr-stream wrote before the paged form had a label of its own.
    const early = decode(await indexed.get(MANIFEST_KEY)).replace(
      OUTPUT_MANIFEST_V2_PAGED,
      OUTPUT_MANIFEST_V2,
    );
    await indexed.put(MANIFEST_KEY, new TextEncoder().encode(early));
    await assert.rejects(
      readOutputManifest(indexed),
      (e) =>
        e instanceof SchemaError &&
        e.pointer === "/records/pages" &&
        /zstream manifest pages/.test(e.message),
    );
    const off = await setManifestPages(indexed, false);
    assert.deepEqual([off.from, off.to, off.changed], [OUTPUT_MANIFEST_V2, OUTPUT_MANIFEST_V2, true]);
    assert.deepEqual(await readOutputManifest(indexed), { ...resolved, schema: OUTPUT_MANIFEST_V2 });
  });

  it("a live owner whose manifest was switched stops at its next commit, and resumes in the new form", async () => {
    const store = new MemoryStore();
    const w = await ZarrStreamWriter.create(store, tinySchema("append"), owner);
    await w.writeRecord(0, rec(0));
    await w.commit([await w.flush()]);
    await setManifestPages(store, true);
    await w.writeRecord(1, rec(1));
    await assert.rejects(
      (async () => w.commit([await w.flush()]))(),
      (e) => e instanceof CommitError && e.reason === "concurrent-owner",
    );
    const again = await ZarrStreamWriter.resume(store, owner);
    assert.equal(again.manifestPages, true);
    await again.writeRecord(1, rec(1));
    await again.commit([await again.flush()]);
    assert.equal((await stored(store)).schema, OUTPUT_MANIFEST_V2_PAGED);
    assert.equal((await stored(store)).n_records, 2);
  });
});

describe("StreamRun's manifestPages", () => {
  const open = (store: MemoryStore, manifestPages?: boolean) =>
    StreamRun.open({
      store,
      id: 0,
      count: 1,
      schema: tinySchema("append"),
      pollMs: 5,
      env: {},
      ...(manifestPages === undefined ? {} : { manifestPages }),
    });

  it("creates the store paged; a restart without the option keeps the form, one against it is refused", async () => {
    const store = new MemoryStore();
    const run = await open(store, true);
    await run.write(0, rec(0));
    await run.close();
    assert.equal((await stored(store)).schema, OUTPUT_MANIFEST_V2_PAGED);
    const again = await open(store);
    await again.write(1, rec(1));
    await again.close();
    assert.equal((await stored(store)).schema, OUTPUT_MANIFEST_V2_PAGED);
    await assert.rejects(open(store, false), ProtocolError);
    await assert.rejects(open(new MemoryStore(), "on" as unknown as boolean), SchemaError);
  });
});
