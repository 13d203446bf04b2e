import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { arrayZarrJson, encodeZarrJson } from "@zarr-stream/shard";
import { NotCommitted } from "@zarr-stream/spec";
import { FsStore, MemoryStore, S3Store, type Store } from "@zarr-stream/store";
import { type S3Server, s3ServerSkipReason, startS3Server } from "@zarr-stream/test-support/s3-server";
import { tempDir } from "@zarr-stream/test-support/temp-dirs";
import {
  readArrayLayout,
  readOutputManifest,
  readOutputManifestIfPresent,
  readRecord,
} from "../src/index.js";
import { countingStore, gridManifest, putGridArray, putManifest, type StoreCall } from "./helpers.js";

const MANIFEST = "output_manifest.json";
const ZARR_JSON = "u/zarr.json";
const value = (t: number, y: number, x: number) => 1000 * t + 10 * y + x;

/** Calls that fetch `key`'s bytes (as opposed to checking its version). */
const fetches = (calls: StoreCall[], key: string) =>
  calls.filter((c) => c.key === key && ["get", "getVersioned", "getRange", "getSuffix"].includes(c.method))
    .length;
const versionChecks = (calls: StoreCall[], key: string) =>
  calls.filter((c) => c.key === key && c.method === "version").length;

/** The cache's behaviour on one kind of store; `fresh` gives a new, empty store of it. */
function cacheSuite(name: string, fresh: () => Store) {
  describe(`metadata cache on ${name}`, () => {
    it("a second read revalidates the manifest and zarr.json by version instead of fetching them", async () => {
      const inner = fresh();
      await putGridArray(inner, "u", [4, 6, 8], value);
      await putManifest(inner, gridManifest(3));
      const { store, calls } = countingStore(inner);
      await readRecord(store, "u", 1, { y: [0, 3] });
      assert.equal(fetches(calls, MANIFEST), 1);
      assert.equal(fetches(calls, ZARR_JSON), 1);
      calls.length = 0;
      const r = await readRecord(store, "u", 2, { y: [0, 3] });
      assert.equal(r.data[0], value(2, 0, 0));
      assert.equal(fetches(calls, MANIFEST), 0);
      assert.equal(fetches(calls, ZARR_JSON), 0);
      assert.equal(versionChecks(calls, MANIFEST), 1);
      assert.equal(versionChecks(calls, ZARR_JSON), 1);
    });

    it("reads started in one turn share one fetch of the manifest; a read started after a commit lands sees it", async () => {
      const inner = fresh();
      await putGridArray(inner, "u", [4, 6, 8], value);
      await putManifest(inner, gridManifest(3));
      const { store, calls } = countingStore(inner);
      const rows = await Promise.all([0, 1, 2].map((i) => readRecord(store, "u", i, { y: [0, 1] })));
      assert.deepEqual(
        rows.map((r) => r.data[0]),
        [0, 1, 2].map((i) => value(i, 0, 0)),
      );
      assert.equal(fetches(calls, MANIFEST), 1, "one manifest fetch for three reads of one turn");
      // A read in flight when a commit lands is not shared with a read started after it.
      const inFlight = readRecord(store, "u", 2);
      await putManifest(inner, gridManifest(4));
      const after = await readRecord(store, "u", 3, { x: [0, 1] });
      assert.equal(after.data[0], value(3, 0, 0));
      await inFlight;
    });

    it("a new commit (a rewritten manifest) is seen by the next read", async () => {
      const inner = fresh();
      await putGridArray(inner, "u", [4, 6, 8], value);
      await putManifest(inner, gridManifest(3));
      const { store, calls } = countingStore(inner);
      await assert.rejects(readRecord(store, "u", 3), NotCommitted);
      assert.equal((await readOutputManifest(store)).n_records, 3);
      await putManifest(inner, gridManifest(4));
      calls.length = 0;
      const r = await readRecord(store, "u", 3, { x: [5, 6] });
      assert.deepEqual(Array.from(r.data as Float64Array), [3005, 3015, 3025, 3035, 3045, 3055]);
      assert.equal(fetches(calls, MANIFEST), 1);
      assert.equal((await readOutputManifest(store)).n_records, 4);
    });

    it("a rewritten zarr.json is seen; an absent manifest reads as absent, then present once written", async () => {
      const inner = fresh();
      const layout = await putGridArray(inner, "u", [4, 6, 8], value);
      assert.deepEqual((await readArrayLayout(inner, "u")).attributes, {});
      await inner.put(ZARR_JSON, encodeZarrJson(arrayZarrJson({ ...layout, attributes: { units: "K" } })));
      assert.deepEqual((await readArrayLayout(inner, "u")).attributes, { units: "K" });
      assert.equal(await readOutputManifestIfPresent(inner), undefined);
      await putManifest(inner, gridManifest(2));
      assert.equal((await readOutputManifestIfPresent(inner))?.n_records, 2);
      await inner.delete(MANIFEST);
      assert.equal(await readOutputManifestIfPresent(inner), undefined);
    });

    it("the shared manifest and layout are frozen, so a caller cannot change what other reads see", async () => {
      const inner = fresh();
      await putGridArray(inner, "u", [4, 6, 8], value);
      await putManifest(inner, gridManifest(3));
      const m = await readOutputManifest(inner);
      assert.throws(() => {
        (m as { n_records: number }).n_records = 99;
      }, TypeError);
      assert.throws(() => m.dims.push({ name: "z", length: 1 }), TypeError);
      const layout = await readArrayLayout(inner, "u");
      assert.throws(() => (layout.shape as number[]).push(1), TypeError);
      assert.equal((await readOutputManifest(inner)).n_records, 3);
    });
  });
}

cacheSuite("MemoryStore", () => new MemoryStore());
cacheSuite("FsStore", () => new FsStore(`${tempDir("reader-cache")}/store`));

describe("metadata cache on S3Store (moto)", { skip: s3ServerSkipReason("moto") }, () => {
  let server: S3Server<S3Store>;
  before(async () => {
    server = await startS3Server("moto", (o) => new S3Store(o));
    await server.makeBucket();
  });
  after(() => server?.stop());
  it("revalidates by ETag: no refetch while unchanged, the new manifest once rewritten", async () => {
    const inner = server.store();
    await putGridArray(inner, "u", [4, 6, 8], value);
    await putManifest(inner, gridManifest(3));
    const { store, calls } = countingStore(inner);
    await readRecord(store, "u", 1, { y: [0, 3] });
    calls.length = 0;
    await readRecord(store, "u", 2, { y: [0, 3] });
    assert.equal(fetches(calls, MANIFEST) + fetches(calls, ZARR_JSON), 0);
    assert.equal(versionChecks(calls, MANIFEST), 1);
    await putManifest(inner, gridManifest(4));
    const r = await readRecord(store, "u", 3, { y: [0, 1], x: [0, 2] });
    assert.deepEqual(Array.from(r.data as Float64Array), [3000, 3001]);
  });
});

describe("metadata cache without versions", () => {
  it("a store with no version tag is read and parsed on every use", async () => {
    const inner = new MemoryStore();
    await putGridArray(inner, "u", [4, 6, 8], value);
    await putManifest(inner, gridManifest(3));
    const calls: string[] = [];
    const plain = {
      url: inner.url,
      get: (k: string) => {
        calls.push(k);
        return inner.get(k);
      },
      getRange: (k: string, o: number, n: number) => inner.getRange(k, o, n),
      getSuffix: (k: string, n: number) => inner.getSuffix(k, n),
      size: (k: string) => inner.size(k),
    };
    await readRecord(plain, "u", 1);
    await putManifest(inner, gridManifest(4));
    await readRecord(plain, "u", 3);
    assert.deepEqual(calls.filter((k) => k === MANIFEST || k === ZARR_JSON).sort(), [
      MANIFEST,
      MANIFEST,
      ZARR_JSON,
      ZARR_JSON,
    ]);
  });
});
