import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { readRecord } from "@zarr-stream/reader";
import { SHARD_READ_ATTEMPTS } from "@zarr-stream/shard";
import { ObjectChanged, type StreamSchema, TornRead } from "@zarr-stream/spec";
import { FsStore, MemoryStore, type ReadableStore, type Store } from "@zarr-stream/store";
import { interleaved } from "@zarr-stream/test-support/interleave";
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
