import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { StoreError } from "@zarr-stream/spec";
import { tempDir } from "@zarr-stream/test-support/temp-dirs";
import type { AbsolutePath, AsyncMutable, AsyncReadable, RangeQuery } from "@zarrita/storage";
import FileSystemStore from "@zarrita/storage/fs";
import * as zarr from "zarrita";
import { FsStore } from "../src/fs-store.js";
import { MemoryStore } from "../src/memory-store.js";
import type { PinnedObject, ReadableStore, Store } from "../src/store.js";
import { fromZarritaStore, toZarritaStore, type ZarritaReadable } from "../src/zarrita.js";
import { bytes, pinnedStoreSuite, storeSuite } from "./store-suite.js";

/*
 * The adapters between our stores and zarrita's, against zarrita 0.7 and @zarrita/storage 0.2 themselves:
 * the assignments below fail to compile if our structural types stop fitting theirs, and the suites hold
 * a zarrita FileSystemStore, read through fromZarritaStore, to the whole read contract of ours.
 */

// Compile-time: ours is a zarrita store, and zarrita's stores are ours to wrap, without casts.
const _readable: AsyncReadable = toZarritaStore(new MemoryStore() as ReadableStore);
const _mutable: AsyncMutable = toZarritaStore(new MemoryStore());
const _wrapped: ReadableStore = fromZarritaStore(new FileSystemStore("/nonexistent"));
void [_readable, _mutable, _wrapped];

const MAJOR = Number(process.versions.node.split(".")[0]);

type PinningStore = Store & { pin(key: string): PinnedObject };

/** Writes, deletes and lists by our FsStore on `dir`; every read through the zarrita store on it. */
function readsThroughZarrita(dir: string, clampsRanges: boolean, zarrita: ZarritaReadable): Store {
  const fs = new FsStore(dir);
  const reads = fromZarritaStore(zarrita, { clampsRanges });
  return {
    url: reads.url,
    readCost: reads.readCost,
    get: (key) => reads.get(key),
    getRange: (key, offset, length) => reads.getRange(key, offset, length),
    getSuffix: (key, n) => reads.getSuffix(key, n),
    size: (key) => reads.size(key),
    ...(reads.pin && { pin: reads.pin }),
    put: (key, value) => fs.put(key, value),
    putIfAbsent: (key, value) => fs.putIfAbsent(key, value),
    delete: (key) => fs.delete(key),
    list: (prefix) => fs.list(prefix),
  };
}

/** A zarrita store over a directory whose ranges are cut at the object's end, as an HTTP server's are. */
function clampingStore(dir: string): ZarritaReadable & { ranges: number } {
  const fss = new FileSystemStore(dir);
  const store = {
    ranges: 0,
    get: (key: AbsolutePath) => fss.get(key),
    async getRange(key: AbsolutePath, range: RangeQuery) {
      store.ranges += 1;
      const whole = await fss.get(key);
      if (whole === undefined) return undefined;
      const b = Uint8Array.from(whole);
      if ("suffixLength" in range) return b.slice(Math.max(0, b.length - range.suffixLength));
      return b.slice(range.offset, range.offset + range.length);
    },
  };
  return store;
}

storeSuite("zarrita FileSystemStore, read through fromZarritaStore", () => {
  const dir = tempDir("zarrita-fs");
  return readsThroughZarrita(dir, false, new FileSystemStore(dir));
});
pinnedStoreSuite(
  "zarrita FileSystemStore, read through fromZarritaStore",
  () => {
    const dir = tempDir("zarrita-fs");
    const store = readsThroughZarrita(dir, false, new FileSystemStore(dir));
    assert.ok(store.pin !== undefined, "whole-object reads offer pin");
    return store as PinningStore;
  },
  true,
);
storeSuite("a range-clamping zarrita store, read through fromZarritaStore({ clampsRanges: true })", () => {
  const dir = tempDir("zarrita-clamp");
  return readsThroughZarrita(dir, true, clampingStore(dir));
});

describe("fromZarritaStore", () => {
  it("FileSystemStore answers ranges past the end with zeros or a RangeError; through the adapter they are cut", async () => {
    const dir = tempDir("zarrita-pad");
    writeFileSync(join(dir, "k"), bytes(1, 2, 3));
    const fss = new FileSystemStore(dir);
    // Why the adapter passes no range to FileSystemStore: it pads a range past the end with zeros, and a
    // suffix longer than the file reads at a negative position (zeros on Node 20, ERR_OUT_OF_RANGE on 22+).
    assert.deepEqual(
      Uint8Array.from((await fss.getRange("/k", { offset: 1, length: 4 }))!),
      bytes(2, 3, 0, 0),
    );
    const suffix = await fss.getRange("/k", { suffixLength: 5 }).then(
      (b) => Uint8Array.from(b!),
      (err: unknown) => (err as { code?: string }).code,
    );
    assert.ok(
      MAJOR < 22 ? suffix instanceof Uint8Array && suffix.length === 5 : suffix === "ERR_OUT_OF_RANGE",
      `FileSystemStore's suffix past the start on Node ${process.versions.node}: ${suffix}`,
    );
    const ours = fromZarritaStore(fss);
    assert.deepEqual(await ours.getSuffix("k", 5), bytes(1, 2, 3));
    assert.deepEqual(await ours.getRange("k", 1, 9), bytes(2, 3));
    assert.equal(await ours.size("k"), 3);
    assert.equal(ours.url, dir, "named by the FileSystemStore's root");
    assert.equal(ours.readCost, "cheap");
  });

  it("keys are held to our rules before the zarrita store sees them", async () => {
    const dir = tempDir("zarrita-confine");
    writeFileSync(join(dir, "secret"), bytes(7));
    const asked: string[] = [];
    const spy: ZarritaReadable = {
      get: (key) => {
        asked.push(key);
        return new FileSystemStore(join(dir, "store")).get(key);
      },
    };
    const ours = fromZarritaStore(spy);
    await assert.rejects(ours.get("../secret"), StoreError);
    await assert.rejects(ours.getSuffix("/secret", 1), StoreError);
    assert.throws(() => ours.pin!("a//b"), StoreError);
    assert.deepEqual(asked, []);
  });

  it("a pin reads the object once and serves that version after the file is replaced", async () => {
    const dir = tempDir("zarrita-pin");
    await new FsStore(dir).put("shard", bytes(1, 2, 3, 4));
    let gets = 0;
    const fss = new FileSystemStore(dir);
    const ours = fromZarritaStore({
      get: (key) => {
        gets += 1;
        return fss.get(key);
      },
    });
    const pinned = ours.pin!("shard");
    assert.deepEqual(await pinned.getSuffix(2), bytes(3, 4));
    await new FsStore(dir).put("shard", bytes(9, 9, 9, 9));
    assert.deepEqual(await pinned.getRange(0, 2), bytes(1, 2));
    assert.equal(gets, 1);
    await pinned.close();
  });

  it("clampsRanges: ranges and suffixes are zarrita range reads, not whole-object reads", async () => {
    const dir = tempDir("zarrita-ranges");
    await new FsStore(dir).put("k", bytes(1, 2, 3, 4, 5));
    const store = clampingStore(dir);
    const ours = fromZarritaStore(store, { clampsRanges: true, url: "https://example.org/run.zarr" });
    assert.deepEqual(await ours.getSuffix("k", 2), bytes(4, 5));
    assert.deepEqual(await ours.getRange("k", 1, 2), bytes(2, 3));
    assert.equal(store.ranges, 2);
    assert.equal(ours.pin, undefined, "no pin: a range store gives no version to hold reads to");
    assert.equal(ours.url, "https://example.org/run.zarr");
    assert.equal(ours.readCost, "per-request");
  });

  it("a zarrita store that answers with something other than bytes is a StoreError naming the key", async () => {
    const ours = fromZarritaStore({ get: () => "text" as unknown as Uint8Array });
    await assert.rejects(ours.get("zarr.json"), (err: unknown) => {
      assert.ok(err instanceof StoreError);
      assert.equal(err.key, "zarr.json");
      return true;
    });
  });
});

describe("toZarritaStore", () => {
  it("zarrita's absolute keys become ours; a suffix is getSuffix; set is put", async () => {
    const mem = new MemoryStore();
    await mem.put("t2m/c/0", bytes(1, 2, 3, 4, 5));
    const z = toZarritaStore(mem);
    assert.deepEqual(await z.get("/t2m/c/0"), bytes(1, 2, 3, 4, 5));
    assert.deepEqual(await z.getRange("/t2m/c/0", { offset: 1, length: 2 }), bytes(2, 3));
    assert.deepEqual(await z.getRange("/t2m/c/0", { suffixLength: 9 }), bytes(1, 2, 3, 4, 5));
    assert.equal(await z.get("/t2m/.zattrs"), undefined, "zarrita's v2 probe reads as absent");
    await z.set("/g/zarr.json", bytes(123));
    assert.deepEqual(await mem.get("g/zarr.json"), bytes(123));
  });

  it("a read-only store gives a zarrita store without set", () => {
    const mem = new MemoryStore();
    const readOnly: ReadableStore = {
      url: mem.url,
      get: (k) => mem.get(k),
      getRange: (k, o, l) => mem.getRange(k, o, l),
      getSuffix: (k, n) => mem.getSuffix(k, n),
      size: (k) => mem.size(k),
    };
    assert.equal("set" in toZarritaStore(readOnly), false);
  });

  it("refuses keys that are not absolute or not ours, and heeds an aborted signal", async () => {
    const z = toZarritaStore(new MemoryStore());
    await assert.rejects(z.get("zarr.json" as `/${string}`), StoreError);
    await assert.rejects(z.get("/a/../b"), StoreError);
    const aborted = AbortSignal.abort();
    await assert.rejects(z.get("/zarr.json", { signal: aborted }), { name: "AbortError" });
  });

  it("zarrita creates, writes and reads a chunked array through it, bytes landing in our store", async () => {
    const mem = new MemoryStore();
    const root = zarr.root(toZarritaStore(mem));
    const arr = await zarr.create(root.resolve("t2m"), {
      shape: [4, 6],
      chunkShape: [2, 3],
      dtype: "float32",
      fillValue: 0,
    });
    const values = Float32Array.from({ length: 24 }, (_, i) => i / 4);
    await zarr.set(arr, null, { data: values, shape: [4, 6], stride: [6, 1] });
    assert.deepEqual(await mem.list("t2m/"), [
      "t2m/c/0/0",
      "t2m/c/0/1",
      "t2m/c/1/0",
      "t2m/c/1/1",
      "t2m/zarr.json",
    ]);
    const back = await zarr.open.v3(zarr.root(toZarritaStore(mem)).resolve("t2m"), { kind: "array" });
    const got = await zarr.get(back, [zarr.slice(1, 3), 2]);
    assert.deepEqual(Array.from(got.data as Float32Array), [values[8], values[14]]);
  });
});
