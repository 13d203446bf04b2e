// Manifest pages (packages/spec/docs/manifest-pages.md) through the writer, on stores created paged
// (WriterOptions.manifestPages): what it stores describes the committed state exactly as an inline
// manifest would, a commit at 10^5 records writes at most 64 KiB of manifest, superseded pages go one
// commit late, and a zombie's page write never reaches committed bytes.
import assert from "node:assert/strict";
import { describe, it, test } from "node:test";
import { MANIFEST_KEY, readOutputManifest, readRecord } from "@zarr-stream/reader";
import {
  MANIFEST_INDEX_PAGE_SIZE,
  MANIFEST_PAGE_PREFIX,
  MANIFEST_PAGE_SIZE,
  type OutputManifestV2,
  pageManifest,
  type StreamSchema,
} from "@zarr-stream/spec";
import { MemoryStore, type Store } from "@zarr-stream/store";
import fc from "fast-check";
import { FencedObjects } from "../src/fenced-objects.js";
import { ZarrStreamWriter } from "../src/index.js";
import { ManifestCommits } from "../src/manifest-commits.js";
import { buildManifestV2, type CommittedState, serializeManifest } from "../src/manifest-doc.js";
import { RecordEntries } from "../src/record-entries.js";
import { bits, storeLocations } from "./store-locations.js";
import { writeGate } from "./write-gate.js";

const P = MANIFEST_PAGE_SIZE;
/** Every store here opts in to the paged form: by default a manifest is the seed's at any size. */
const PAGED = { manifestPages: true } as const;
const decode = (b: Uint8Array | undefined) => new TextDecoder().decode(b);

function tinySchema(timeMode: StreamSchema["time_mode"], shardT = 1): StreamSchema {
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
    shard_shape: { time: shardT, x: 2 },
    profile: "diagnostic",
  };
}

const rec = (r: number) => ({ v: Float32Array.of(r, -r) });
const pageKeys = async (store: Store) => (await store.list(MANIFEST_PAGE_PREFIX)).sort();

/** From now on, the manifest pages `store` is asked for, in order, and whether it held each. */
function logPageGets(store: MemoryStore): { key: string; found: boolean }[] {
  const log: { key: string; found: boolean }[] = [];
  const get = store.get.bind(store);
  store.get = async (key) => {
    const bytes = await get(key);
    if (key.startsWith(MANIFEST_PAGE_PREFIX)) log.push({ key, found: bytes !== undefined });
    return bytes;
  };
  return log;
}

/**
 * The next versioned read of the manifest returns `bytes`, as a read that raced later commits would;
 * `served()` tells whether that read has happened.
 */
function serveManifestOnce(
  store: MemoryStore,
  bytes: Uint8Array,
  version: string,
): { served: () => boolean } {
  let stale = true;
  const getVersioned = store.getVersioned.bind(store);
  store.getVersioned = async (key) => {
    if (key === MANIFEST_KEY && stale) {
      stale = false;
      return { bytes, version };
    }
    return getVersioned(key);
  };
  return { served: () => !stale };
}

/**
 * The stored manifest is what paging the writer's resolved manifest afresh gives, byte for byte, and
 * reading the store back resolves to that resolved manifest: paged and inline describe one state.
 */
async function assertPagedIsInline(store: Store, w: ZarrStreamWriter): Promise<void> {
  const resolved = w.lastManifest as OutputManifestV2;
  const stored = await store.get(MANIFEST_KEY);
  assert.equal(decode(stored), decode(serializeManifest(pageManifest(resolved).manifest)));
  assert.deepEqual(await readOutputManifest(store), JSON.parse(decode(serializeManifest(resolved))));
}

test("indexed: after any commits and invalidations the stored pages describe the committed state", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: P + 1, max: 2 * P + 40 }),
      fc.array(
        fc.record({
          kind: fc.constantFrom("commit", "invalidate"),
          picks: fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
        }),
        { minLength: 1, maxLength: 5 },
      ),
      async (n, ops) => {
        const store = new MemoryStore();
        const times = Array.from({ length: n }, (_, i) => i * 10);
        const w = await ZarrStreamWriter.create(
          store,
          tinySchema({ indexed: { times } }, 4),
          { kind: "single" },
          {},
          PAGED,
        );
        await assertPagedIsInline(store, w);
        for (const op of ops) {
          const indices = [...new Set(op.picks.map((p) => p % n))];
          if (op.kind === "invalidate") await w.invalidate(indices);
          else {
            const committed = (w.lastManifest as OutputManifestV2).records!.entries;
            const fresh = indices.filter((i) => !committed[i]!.committed);
            for (const i of fresh) await w.writeRecordAt(i, times[i]!, rec(i));
            await w.flush();
          }
          await assertPagedIsInline(store, w);
        }
        await w.close();
      },
    ),
    { numRuns: 12 },
  );
});

test("append: time shards page as they pass P, and a truncate into a sealed page makes it tail again", async () => {
  // A Single writer's append store is v1, which never pages: an owner's is v2.
  const owner = { kind: "owner", nWriters: 1 } as const;
  const store = new MemoryStore();
  const w = await ZarrStreamWriter.create(store, tinySchema("append"), owner, {}, PAGED);
  const n = 2 * P + 30;
  for (let r = 0; r < n; r++) {
    await w.writeRecord(r, rec(r));
    if ((r + 1) % 64 === 0 || r + 1 === n || r + 1 === P || r + 1 === P + 1)
      await w.commit([await w.flush()]);
    if (r + 1 === P || r + 1 === P + 1) {
      await assertPagedIsInline(store, w);
      const stored = JSON.parse(decode(await store.get(MANIFEST_KEY))) as OutputManifestV2;
      assert.equal(stored.time_shard_pages?.length, r + 1 === P ? undefined : 1, `${r + 1} shards`);
    }
  }
  await assertPagedIsInline(store, w);
  await w.close();
  const cut = P + 100;
  const resumed = await ZarrStreamWriter.resume(store, owner, {}, cut - 1);
  await assertPagedIsInline(store, resumed);
  const stored = JSON.parse(decode(await store.get(MANIFEST_KEY))) as OutputManifestV2;
  assert.equal(stored.n_records, cut);
  assert.equal(stored.time_shard_pages?.length, 1);
  assert.equal(stored.time_shards.length, cut - P);
  const got = await readRecord(store, "v", cut - 1);
  assert.deepEqual([...(got.data as Float32Array)], [cut - 1, -(cut - 1)]);
});

test("a superseded page is deleted one commit after the manifest that stopped referring to it", async () => {
  const store = new MemoryStore();
  const times = Array.from({ length: P + 1 }, (_, i) => i);
  const w = await ZarrStreamWriter.create(
    store,
    tinySchema({ indexed: { times } }),
    { kind: "single" },
    {},
    PAGED,
  );
  const firstPage = async () =>
    (JSON.parse(decode(await store.get(MANIFEST_KEY))) as OutputManifestV2).records!.pages![0]!.sha256;
  const seen = [await firstPage()];
  for (let i = 0; i < 3; i++) {
    await w.writeRecordAt(i, i, rec(i));
    await w.flush();
    seen.push(await firstPage());
  }
  const keys = await pageKeys(store);
  const has = (sha: string) => keys.some((k) => k.includes(sha));
  // manifests 0..3 each changed page 0; after manifest 3 landed, manifest 1's page is the oldest kept
  assert.ok(!has(seen[0]!), "page of manifest 0 is collected once manifest 2 landed");
  assert.ok(!has(seen[1]!), "page of manifest 1 is collected once manifest 3 landed");
  assert.ok(has(seen[2]!), "the previous manifest's page stays for readers holding it");
  assert.ok(has(seen[3]!));
  await w.close();
});

/** A store that counts the bytes every write puts. */
function countingStore(): MemoryStore & { written: number } {
  const s = new MemoryStore() as MemoryStore & { written: number };
  s.written = 0;
  const putIfVersion = s.putIfVersion.bind(s);
  s.putIfVersion = (k, b, v) => {
    s.written += b.byteLength;
    return putIfVersion(k, b, v);
  };
  return s;
}

describe("manifest bytes per commit at 10^5 records", () => {
  const N = 100_000;
  const budget = 64 * 1024;
  const id = (timeMode: StreamSchema["time_mode"], shardT: number) => ({
    schema: tinySchema(timeMode, shardT),
    fingerprint: `sha256:${"0".repeat(64)}`,
    nWriters: 1,
    regionDims: [],
    baseUrl: "memory://",
    paged: true,
  });
  const base = { commitSeq: 1, staticsCommitted: [], blobs: [], createdAt: "2026-01-01T00:00:00Z" };

  /** Writes `first`, then `next` of the same store, and returns the bytes the second write put. */
  async function bytesOfNextCommit(
    ident: ReturnType<typeof id>,
    first: CommittedState,
    next: CommittedState,
  ): Promise<{ bytes: number; manifest: number }> {
    const store = countingStore();
    const commits = new ManifestCommits(new FencedObjects(store), null, { url: store.url, writer: 0 });
    const write = async (state: CommittedState) => {
      const manifest = buildManifestV2(ident, state);
      await commits.write({ ...commits.compose(manifest), state, manifest });
    };
    await write(first);
    store.written = 0;
    await write(next);
    const resolved = await readOutputManifest(store);
    assert.deepEqual(resolved, JSON.parse(decode(serializeManifest(buildManifestV2(ident, next)))));
    return { bytes: store.written, manifest: (await store.get(MANIFEST_KEY))!.byteLength };
  }

  it("indexed: committing one record rewrites its page, the refs and the head only", async () => {
    const times = Array.from({ length: N }, (_, i) => i * 3600);
    const ident = id({ indexed: { times } }, 8);
    // every record committed but one in the middle and one at the end; each is then committed
    const entries = times.map((t, i) => ({ committed: i !== N / 2 && i !== N - 1, t, generation: 1 }));
    const first: CommittedState = {
      ...base,
      nCommitted: N - 2,
      timeShards: [],
      lastT: null,
      entries: RecordEntries.from(entries),
    };
    for (const i of [N / 2, N - 1]) {
      const after = entries.slice();
      after[i] = { committed: true, t: times[i]!, generation: 2 };
      const next = { ...first, entries: RecordEntries.from(after), commitSeq: 2 };
      const { bytes } = await bytesOfNextCommit(ident, first, next);
      assert.ok(bytes <= budget, `record ${i}: ${bytes} bytes written, budget ${budget}`);
      assert.ok(bytes > 0);
    }
  });

  it("append: committing one record rewrites the tail and the head only", async () => {
    const shardT = 8;
    const ident = id("append", shardT);
    const shards = Array.from({ length: N / shardT }, (_, index) => ({
      index,
      t_start: index * shardT,
      t_end: index * shardT + shardT - 1,
      n: shardT,
    }));
    const first: CommittedState = { ...base, nCommitted: N, timeShards: shards, lastT: N - 1 };
    const next: CommittedState = {
      ...first,
      nCommitted: N + 1,
      timeShards: [...shards, { index: N / shardT, t_start: N, t_end: N, n: 1 }],
      lastT: N,
      commitSeq: 2,
    };
    const { bytes } = await bytesOfNextCommit(ident, first, next);
    assert.ok(bytes <= budget, `${bytes} bytes written, budget ${budget}`);
    // the whole list, inline, is far larger: the budget is met by paging, not by a small list
    assert.ok(serializeManifest(buildManifestV2(ident, next)).byteLength > 10 * budget);
  });
});

const { s3Skip, backends } = storeLocations("pages");

for (const [backend, location] of backends) {
  describe(
    `a zombie's page write racing a takeover on ${backend}`,
    { skip: backend === "S3Store" ? s3Skip : undefined },
    () => {
      it("lands unreferenced: the successor's manifest and pages keep every byte", async () => {
        const at = location();
        const times = Array.from({ length: P + 8 }, (_, i) => i * 60);
        const schema = tinySchema({ indexed: { times } });
        const owner = { kind: "owner", nWriters: 1 } as const;
        const gate = writeGate(at(), (key) => key.startsWith(MANIFEST_PAGE_PREFIX));
        const a = await ZarrStreamWriter.create(gate.store, schema, owner, {}, PAGED);
        await a.writeRecordAt(0, 0, rec(0));
        await a.commit([await a.flush()]);
        // A's next commit has passed its lease check and its page write is on the wire ...
        await a.writeRecordAt(1, 60, rec(1));
        const token = await a.flush();
        gate.hold();
        const aCommit = a.commit([token]).then(
          () => undefined,
          (err: unknown) => err,
        );
        await gate.reached;
        // ... when B takes the store over and commits a different record of the same page
        const b = await ZarrStreamWriter.resume(at(), owner);
        await b.writeRecordAt(2, 120, rec(2));
        await b.commit([await b.flush()]);
        const store = at();
        const snapshot = async () => {
          const manifest = decode(await store.get(MANIFEST_KEY));
          const refs = (JSON.parse(manifest) as OutputManifestV2).records!.pages!;
          const pages = await Promise.all(
            refs.map(async (r) => decode(await store.get(`${MANIFEST_PAGE_PREFIX}records/${r.sha256}.json`))),
          );
          return { manifest, pages };
        };
        const before = await snapshot();
        gate.release();
        const err = await aCommit;
        assert.ok(err instanceof Error, "the zombie's commit fails");
        assert.deepEqual(await snapshot(), before, "no committed byte changed");
        const referenced = new Set(
          (JSON.parse(before.manifest) as OutputManifestV2).records!.pages!.map((r) => r.sha256),
        );
        const stray = (await pageKeys(store)).filter((k) => ![...referenced].some((s) => k.includes(s)));
        assert.ok(stray.length >= 1, "the zombie's page landed, unreferenced");
        const m = (await readOutputManifest(store)) as OutputManifestV2;
        assert.deepEqual(
          m.records!.entries.slice(0, 3).map((e) => e.committed),
          [true, false, true],
        );
        for (const i of [0, 2]) assert.equal(bits((await readRecord(store, "v", i)).data), bits(rec(i).v));
      });
    },
  );
}

test("indexed: a one-record read of a paged store fetches only the page holding the record's entry", async () => {
  const store = new MemoryStore();
  const n = 3 * P + 7;
  const times = Array.from({ length: n }, (_, i) => i);
  const w = await ZarrStreamWriter.create(
    store,
    tinySchema({ indexed: { times } }, 4),
    { kind: "single" },
    {},
    PAGED,
  );
  const picked = [5, P + 9, 3 * P + 2];
  for (const i of picked) await w.writeRecordAt(i, i, rec(i));
  await w.flush();
  const pageGets = logPageGets(store);
  const got = await readRecord(store, "v", P + 9);
  assert.deepEqual([...(got.data as Float32Array)], [P + 9, -(P + 9)]);
  assert.equal(pageGets.length, 1);
  await assert.rejects(readRecord(store, "v", P + 10), (e) => (e as Error).name === "NotCommitted");
  await assert.rejects(readRecord(store, "v", n), (e) => (e as Error).name === "NotCommitted");
  assert.equal(pageGets.length, 1, "the other record of that page is answered from the same page");
  await w.invalidate([P + 9]);
  await assert.rejects(readRecord(store, "v", P + 9), (e) => (e as Error).name === "NotCommitted");
  const last = await readRecord(store, "v", 3 * P + 2);
  assert.deepEqual([...(last.data as Float32Array)], [3 * P + 2, -(3 * P + 2)]);
  await w.close();
});

test("indexed: a one-record read whose head names a page already collected reads the manifest again", async () => {
  const store = new MemoryStore();
  const n = 2 * P + 3;
  const times = Array.from({ length: n }, (_, i) => i * 10);
  const w = await ZarrStreamWriter.create(
    store,
    tinySchema({ indexed: { times } }, 4),
    { kind: "single" },
    {},
    PAGED,
  );
  const commit = async (i: number) => {
    await w.writeRecordAt(i, times[i]!, rec(i));
    await w.flush();
  };
  await commit(5);
  const oldBytes = (await store.get(MANIFEST_KEY))!;
  const oldPages = await pageKeys(store);
  await commit(6);
  await commit(7);
  const now = await pageKeys(store);
  assert.ok(
    oldPages.some((k) => !now.includes(k)),
    "a page of the first manifest is collected two commits later",
  );
  // The head read returns the first manifest, as if it raced the two commits.
  const stale = serveManifestOnce(store, oldBytes, "stale");
  const got = await readRecord(store, "v", 6);
  assert.deepEqual([...(got.data as Float32Array)], [6, -6]);
  assert.equal(stale.served(), true);
  await w.close();
});

test("a Single writer's close collects the previous manifest's pages early; a reader holding it reads again once", async () => {
  const store = new MemoryStore();
  const n = 2 * P + 3;
  // Times no other test uses: no page of this store is in the reader's process-wide cache.
  const times = Array.from({ length: n }, (_, i) => i * 10 + 3);
  const w = await ZarrStreamWriter.create(
    store,
    tinySchema({ indexed: { times } }, 4),
    { kind: "single" },
    {},
    PAGED,
  );
  const commit = async (i: number) => {
    await w.writeRecordAt(i, times[i]!, rec(i));
    await w.flush();
  };
  await commit(5);
  await commit(6);
  // A reader reads this manifest, then the writer commits record 7 as it closes.
  const heldBytes = (await store.get(MANIFEST_KEY))!;
  const held = JSON.parse(decode(heldBytes)) as OutputManifestV2;
  const heldPages = await pageKeys(store);
  await w.writeRecordAt(7, times[7]!, rec(7));
  await w.close();
  const closed = JSON.parse(decode(await store.get(MANIFEST_KEY))) as OutputManifestV2;
  assert.equal(closed.commit_seq, held.commit_seq + 1, "one commit since the held manifest");
  const now = await pageKeys(store);
  const heldPage = `${MANIFEST_PAGE_PREFIX}records/${held.records!.pages![0]!.sha256}.json`;
  assert.ok(heldPages.includes(heldPage));
  assert.ok(!now.includes(heldPage), "close's rewrite of the manifest collected the held manifest's page");
  // The reader's head read returns the manifest it holds; the page it names is gone.
  const heldRead = serveManifestOnce(store, heldBytes, "held");
  const pageGets = logPageGets(store);
  for (const r of [5, 6, 7]) {
    const got = await readRecord(store, "v", r);
    assert.deepEqual([...(got.data as Float32Array)], [r, -r], `record ${r}`);
  }
  assert.equal(heldRead.served(), true, "the reader started from the manifest it held");
  assert.deepEqual(
    pageGets.filter((g) => !g.found).map((g) => g.key),
    [heldPage],
    "it met the collected page once, then read the manifest again",
  );
});

test("indexed past 32 record pages: refs go to index pages, a commit writes one of each, resume goes on", async () => {
  const R = MANIFEST_INDEX_PAGE_SIZE;
  const n = (R + 3) * P;
  const times = Array.from({ length: n }, (_, i) => i);
  const store = new MemoryStore();
  const schema = tinySchema({ indexed: { times } }, 8);
  const w = await ZarrStreamWriter.create(store, schema, { kind: "single" }, {}, PAGED);
  const late = [R * P + 5, R * P + 6, 3];
  for (let r = 0; r < n; r++) {
    if (late.includes(r)) continue;
    await w.writeRecordAt(r, r, rec(r));
    if ((r + 1) % 4096 === 0 || r + 1 === n) await w.flush();
  }
  const head = async () => JSON.parse(decode(await store.get(MANIFEST_KEY))) as OutputManifestV2;
  assert.equal((await head()).records!.pages, undefined);
  assert.equal((await head()).records!.page_index!.length, 2);
  await assertPagedIsInline(store, w);

  // One record of the second index page's group: one record page, one index page and the head.
  const puts: string[] = [];
  const putIfVersion = store.putIfVersion.bind(store);
  store.putIfVersion = (k, b, v) => {
    puts.push(k);
    return putIfVersion(k, b, v);
  };
  await w.writeRecordAt(late[0]!, late[0]!, rec(late[0]!));
  await w.flush();
  const written = puts.filter((k) => k.startsWith(MANIFEST_PAGE_PREFIX) || k === MANIFEST_KEY);
  assert.deepEqual(written.map((k) => k.split("/").at(-2) ?? k).sort(), [
    "output_manifest.json",
    "record_pages",
    "records",
  ]);

  // A one-record read fetches the index page and the record page it names, nothing else (both are new,
  // so no earlier read has them cached).
  const gets = logPageGets(store);
  const got = await readRecord(store, "v", late[0]!);
  assert.deepEqual([...(got.data as Float32Array)], [late[0]!, -late[0]!]);
  assert.deepEqual(gets.map((g) => g.key.split("/").at(-2)).sort(), ["record_pages", "records"]);
  await assert.rejects(readRecord(store, "v", late[1]!), (e) => (e as Error).name === "NotCommitted");
  await assert.rejects(readRecord(store, "v", n), (e) => (e as Error).name === "NotCommitted");
  await assertPagedIsInline(store, w);

  // Superseded index pages go one commit late, like record pages: only the last two manifests' remain.
  const referenced = async () => {
    const m = await head();
    const index = m.records!.page_index!.map((r) => r.sha256);
    const refs = (
      await Promise.all(
        index.map(async (sha) =>
          JSON.parse(decode(await store.get(`${MANIFEST_PAGE_PREFIX}record_pages/${sha}.json`))),
        ),
      )
    ).flat() as { sha256: string }[];
    return new Set([...index, ...refs.map((r) => r.sha256)]);
  };
  const before = await referenced();
  await w.writeRecordAt(3, 3, rec(3));
  await w.flush();
  const kept = new Set([...before, ...(await referenced())]);
  for (const k of await pageKeys(store))
    assert.ok(kept.has(k.slice(k.lastIndexOf("/") + 1, -".json".length)), `${k} is neither manifest's`);
  await w.close();

  const resumed = await ZarrStreamWriter.resume(store, { kind: "single" });
  await resumed.writeRecordAt(late[1]!, late[1]!, rec(late[1]!));
  await resumed.flush();
  await assertPagedIsInline(store, resumed);
  const m = (await readOutputManifest(store)) as OutputManifestV2;
  assert.equal(m.records!.entries.filter((e) => e.committed).length, n);
  for (const i of late) assert.equal(bits((await readRecord(store, "v", i)).data), bits(rec(i).v));
  await resumed.close();
});
