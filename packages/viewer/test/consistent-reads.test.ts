import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  MANIFEST_KEY,
  openArray,
  readArrayRegion,
  readOutputManifest,
  readRecord,
} from "@zarr-stream/reader";
import { SHARD_READ_ATTEMPTS } from "@zarr-stream/shard";
import { fillGenerated, ObjectChanged, type StreamSchema, TornRead } from "@zarr-stream/spec";
import { FsStore, MemoryStore, type ReadableStore, S3Store, type Store } from "@zarr-stream/store";
import { interleaved } from "@zarr-stream/test-support/interleave";
import { type S3Server, s3ServerSkipReason, startS3Server } from "@zarr-stream/test-support/s3-server";
import { ZarrStreamWriter } from "@zarr-stream/writer";
import { serveViewer, type ViewerServer } from "../src/index.js";
import { httpStoreOf, tokenFetch } from "./serve-client.js";

/**
 * A time shard of 4 records whose chunks span all 4 (time chunk = time shard), so every flush of a record
 * re-encodes the chunks that hold the committed ones: their bodies move and change size while their
 * values stay. Each shard is several times the 64 KiB first window, so bodies are read apart from the index.
 */
const schema: StreamSchema = {
  dims: [
    ["time", 0],
    ["lat", 128],
    ["lon", 128],
  ],
  time_dim: "time",
  time_mode: "append",
  vars: [{ name: "k", dims: ["time", "lat", "lon"], dtype: "float64", attrs: {} }],
  statics: [],
  chunk_shape: { time: 4, lat: 64, lon: 64 },
  shard_shape: { time: 4, lat: 128, lon: 128 },
  profile: "diagnostic",
};
const SHARD = "k/c/0/0/0";
const record = (r: number) =>
  Float64Array.from({ length: 128 * 128 }, (_, i) => Math.sin(i * 0.37 + r) * 1e3 + r * 1e-3 * i);

/** A single writer on `store` that has committed records 0 and 1 (the shard is open: it holds 2 of 4). */
async function twoCommitted(store: Store) {
  const writer = await ZarrStreamWriter.create(store, schema, { kind: "single" });
  for (const r of [0, 1]) await writer.writeRecord(60 * r, { k: record(r) });
  await writer.flush();
  let next = 2;
  /** Writes and flushes (commits) the writer's next record: the open shard is rewritten whole. */
  const flushNext = async () => {
    const r = next++;
    await writer.writeRecord(60 * r, { k: record(r) });
    await writer.flush();
  };
  return { flushNext };
}

/** The store without its pin: how every store read before pins, for showing what the harness catches. */
function withoutPin(store: ReadableStore): ReadableStore {
  return {
    url: store.url,
    get: (k) => store.get(k),
    getRange: (k, o, n) => store.getRange(k, o, n),
    getSuffix: (k, n) => store.getSuffix(k, n),
    size: (k) => store.size(k),
  };
}

describe("readRecord while a writer commits: committed values only", () => {
  let dir: string;
  let server: ViewerServer;
  let fs: FsStore;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "zs-viewer-consistent-"));
    fs = new FsStore(dir);
    server = await serveViewer(dir);
  });
  after(() => server?.close());

  let n = 0;
  /** Each case writes into a fresh directory below the served one; reads go through `reader`. */
  const backends: Record<string, () => { store: Store; reader: ReadableStore }> = {
    MemoryStore: () => {
      const store = new MemoryStore();
      return { store, reader: store };
    },
    FsStore: () => {
      const store = new FsStore(join(dir, `fs-${n++}`));
      return { store, reader: store };
    },
    "HttpStore over serveViewer": () => {
      const sub = `http-${n++}`;
      return { store: new FsStore(join(dir, sub)), reader: httpStoreOf(server, `${sub}/`) };
    },
  };

  for (const [name, make] of Object.entries(backends)) {
    it(`${name}: record 1 read while the writer flushes record 2 between the index read and the body reads`, async () => {
      const { store, reader } = make();
      const { flushNext } = await twoCommitted(store);
      const { store: racing, ran } = interleaved(reader, SHARD, flushNext, { readCost: "cheap" });
      const got = await readRecord(racing, "k", 1);
      assert.equal(ran(), 1, "the writer's flush ran between the index read and the body reads");
      assert.deepEqual(got.data, record(1));
    });

    it(`${name}: a shard rewritten under every attempt gives TornRead naming it, never mixed values`, async () => {
      const { store, reader } = make();
      const { flushNext } = await twoCommitted(store);
      const a = (await store.get(SHARD))!;
      await flushNext();
      const b = (await store.get(SHARD))!;
      let flip = 0;
      const rewrite = () => store.put(SHARD, flip++ % 2 === 0 ? a : b);
      const { store: racing, ran } = interleaved(reader, SHARD, rewrite, {
        readCost: "cheap",
        times: Infinity,
      });
      if (name === "FsStore") {
        // One open file serves the whole read: the rewrites cannot reach it.
        assert.deepEqual((await readRecord(racing, "k", 1)).data, record(1));
        return;
      }
      await assert.rejects(readRecord(racing, "k", 1), (err: unknown) => {
        assert.ok(err instanceof TornRead, String(err));
        assert.equal(err.key, SHARD);
        assert.equal(err.attempts, SHARD_READ_ATTEMPTS);
        return true;
      });
      assert.equal(ran(), SHARD_READ_ATTEMPTS);
    });
  }

  it("without pins the same interleaving decodes the new shard at the old index's offsets (the harness catches it)", async () => {
    const { store, reader } = backends["HttpStore over serveViewer"]!();
    const { flushNext } = await twoCommitted(store);
    const { store: racing } = interleaved(withoutPin(reader), SHARD, flushNext, { readCost: "cheap" });
    const got = await readRecord(racing, "k", 1).catch((err: unknown) => err);
    if (got instanceof Error) return;
    assert.notDeepEqual((got as { data: Float64Array }).data, record(1));
  });

  it("serveViewer: a strong ETag names the file; If-Match with another version is 412, before any Range", async () => {
    await fs.put("obj/c/0", new Uint8Array(100).fill(1));
    const first = await tokenFetch(server)(`${server.url}store/obj/c/0`, { headers: { Range: "bytes=0-9" } });
    await first.arrayBuffer();
    const etag = first.headers.get("etag");
    assert.match(etag ?? "", /^"[0-9a-f]+-[0-9a-f]+-[0-9a-f]+"$/);
    const same = await tokenFetch(server)(`${server.url}store/obj/c/0`, {
      headers: { Range: "bytes=-5", "If-Match": etag! },
    });
    assert.equal(same.status, 206);
    assert.deepEqual(new Uint8Array(await same.arrayBuffer()), new Uint8Array(5).fill(1));
    await fs.put("obj/c/0", new Uint8Array(100).fill(2));
    for (const range of ["bytes=0-9", "bytes=500-"]) {
      const stale = await tokenFetch(server)(`${server.url}store/obj/c/0`, {
        headers: { Range: range, "If-Match": etag! },
      });
      assert.equal(stale.status, 412, range);
      assert.equal((await stale.arrayBuffer()).byteLength, 0);
    }
    const any = await tokenFetch(server)(`${server.url}store/obj/c/0`, {
      headers: { Range: "bytes=0-0", "If-Match": "*" },
    });
    assert.equal(any.status, 206);
    assert.notEqual(any.headers.get("etag"), etag);
    await any.arrayBuffer();
  });

  it("HttpStore.pin: the first answer's ETag rides as If-Match; a replaced or deleted object is ObjectChanged", async () => {
    const http = httpStoreOf(server);
    assert.equal(await http.pin("nope/c/0").getSuffix(4), undefined);
    for (const change of [
      () => fs.put("pinned/c/0", new Uint8Array(30).fill(9)),
      () => fs.delete("pinned/c/0"),
    ]) {
      await fs.put(
        "pinned/c/0",
        Uint8Array.from({ length: 20 }, (_, i) => i),
      );
      const pinned = http.pin("pinned/c/0");
      assert.deepEqual(await pinned.getSuffix(4), Uint8Array.from([16, 17, 18, 19]));
      assert.deepEqual(await pinned.getRange(2, 3), Uint8Array.from([2, 3, 4]));
      assert.deepEqual(await pinned.getRange(2, 0), new Uint8Array(0));
      await change();
      await assert.rejects(pinned.getRange(0, 4), ObjectChanged);
      await assert.rejects(pinned.getRange(0, 0), ObjectChanged);
      await pinned.close();
    }
  });
});

/**
 * An owner (lat 0-32) and a contributor (lat 32-64), chunks of 2 records in time shards of 4: the flush of
 * record r re-encodes the chunk holding committed record r - 1 when r is odd, and rewrites the open shard.
 */
const splitSchema: StreamSchema = {
  ...schema,
  dims: [
    ["time", 0],
    ["lat", 64],
    ["lon", 64],
  ],
  chunk_shape: { time: 2, lat: 16, lon: 64 },
  shard_shape: { time: 4, lat: 32, lon: 64 },
};
const LAT_SPLIT: [number, number][] = [
  [0, 32],
  [32, 64],
];
const generated = (r: number, lat: [number, number]) =>
  fillGenerated("float64", 17, r, ["lat", "lon"], { lat, lon: [0, 64] }) as Float64Array;
/** Records [a, b) over the whole grid, as a region read returns them (C order). */
const generatedRecords = (a: number, b: number) => {
  const out = new Float64Array((b - a) * 64 * 64);
  for (let r = a; r < b; r++) out.set(generated(r, [0, 64]), (r - a) * 64 * 64);
  return out;
};

/** Owner and contributor on `store` with records [0, n) committed; `commitNext` writes, flushes and commits one more. */
async function splitCommitted(store: Store, n: number) {
  const owner = await ZarrStreamWriter.create(
    store,
    splitSchema,
    { kind: "owner", nWriters: 2 },
    { lat: LAT_SPLIT[0]! },
  );
  const c = await ZarrStreamWriter.join(store, { kind: "contributor", id: 1 }, { lat: LAT_SPLIT[1]! });
  let next = 0;
  const commitNext = async () => {
    const r = next++;
    await owner.writeRecord(60 * r, { k: generated(r, LAT_SPLIT[0]!) });
    await c.writeRecord(60 * r, { k: generated(r, LAT_SPLIT[1]!) });
    const token = await c.flush();
    await owner.commit([await owner.flush(), token]);
  };
  while (next < n) await commitNext();
  return { commitNext };
}

describe("a flush and commit between a read's manifest read and its first shard read", () => {
  let dir: string;
  let server: ViewerServer;
  let s3: S3Server<S3Store> | undefined;
  const motoSkip = s3ServerSkipReason("moto");
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "zs-viewer-manifest-interleave-"));
    server = await serveViewer(dir);
  });
  after(async () => {
    server?.close();
    await s3?.stop();
  });

  let n = 0;
  /** Each case writes a fresh store; reads go through `reader` (the served directory for HttpStore). */
  const backends: Record<string, () => Promise<{ store: Store; reader: ReadableStore }>> = {
    FsStore: async () => {
      const store = new FsStore(join(dir, `fs-${n++}`));
      return { store, reader: store };
    },
    "S3Store (moto)": async () => {
      s3 ??= await startS3Server("moto", (o) => new S3Store(o));
      const store = s3.store({ prefix: `s3-${n++}`, bucket: await s3.makeBucket() });
      return { store, reader: store };
    },
    "HttpStore over serveViewer": async () => {
      const sub = `http-${n++}`;
      return { store: new FsStore(join(dir, sub)), reader: httpStoreOf(server, `${sub}/`) };
    },
  };

  /**
   * `reader` with `commitNext` run once its manifest read has its bytes, before they reach the reader; the
   * shard reads the reader has begun by then (none, asserted) are counted through `pin` and the plain reads.
   */
  function afterManifest(reader: ReadableStore, commitNext: () => Promise<void>) {
    let shardReads = 0;
    const counting = new Proxy(reader, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          if (typeof args[0] === "string" && args[0].includes("/c/")) shardReads++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    let before = -1;
    const { store, ran } = interleaved(
      counting,
      MANIFEST_KEY,
      async () => {
        before = shardReads;
        await commitNext();
      },
      { reads: ["get", "getVersioned"] },
    );
    return { store, ran, shardReadsBefore: () => before, shardReads: () => shardReads };
  }

  for (const [name, make] of Object.entries(backends)) {
    const skip = name.includes("moto") ? motoSkip : undefined;
    it(
      `${name}: readRecord of the newest committed record returns the values of the manifest it read`,
      { skip },
      async () => {
        const { store, reader } = await make();
        const { commitNext } = await splitCommitted(store, 3);
        const racing = afterManifest(reader, commitNext);
        const got = await readRecord(racing.store, "k", 2);
        assert.equal(racing.ran(), 1, "the commit ran after the manifest read");
        assert.equal(racing.shardReadsBefore(), 0, "no shard read had begun");
        assert.ok(racing.shardReads() > 0);
        assert.equal((await readOutputManifest(store)).n_records, 4, "record 3 was committed mid-read");
        assert.deepEqual(got.data, generated(2, [0, 64]));
        // Record 4, committed between the manifest read (4 records) and the shard reads, is not a committed
        // record of the manifest read: NotCommitted, not the values the newer shard holds.
        const again = afterManifest(reader, commitNext);
        await assert.rejects(readRecord(again.store, "k", 4), { name: "NotCommitted" });
        assert.equal(again.ran(), 1);
        assert.equal((await readOutputManifest(store)).n_records, 5);
      },
    );

    it(
      `${name}: readArrayRegion over every record the manifest commits returns exactly those values`,
      { skip },
      async () => {
        const { store, reader } = await make();
        const { commitNext } = await splitCommitted(store, 5);
        const racing = afterManifest(reader, commitNext);
        const m = await readOutputManifest(racing.store);
        assert.equal(racing.ran(), 1);
        assert.equal(racing.shardReadsBefore(), 0);
        assert.equal(m.n_records, 5);
        const array = await openArray(racing.store, "k");
        const got = await readArrayRegion(racing.store, "k", array, [
          [0, m.n_records],
          [0, 64],
          [0, 64],
        ]);
        assert.ok(racing.shardReads() > 0);
        assert.equal((await readOutputManifest(store)).n_records, 6, "record 5 was committed mid-read");
        assert.deepEqual(got, generatedRecords(0, 5));
      },
    );
  }
});
