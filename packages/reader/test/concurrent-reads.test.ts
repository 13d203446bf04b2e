import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, it } from "node:test";
import { FsStore, MemoryStore, type ReadableStore } from "@zarr-stream/store";
import { readArrayLayout, readArrayRegion, readRecord } from "../src/index.js";
import { gridManifest, putGridArray, putManifest } from "./helpers.js";

// readArrayRegion reads shard windows into buffers it keeps between calls (one per concurrent shard
// read, via FsStore.getSuffixInto). Calls running at once must never share one: each result is checked
// value by value against the formula that built the store.
const root = mkdtempSync(join(tmpdir(), "zs-reader-conc-"));
after(() => rmSync(root, { recursive: true, force: true }));

it("concurrent whole-array and box reads on FsStore return their own values (window buffers never shared)", async () => {
  const store = new FsStore(root);
  const value = (a: number, t: number, y: number, x: number) => 1e6 * a + 1000 * t + 10 * y + x;
  for (const a of [0, 1]) await putGridArray(store, `v${a}`, [4, 12, 16], (t, y, x) => value(a, t, y, x));
  const boxes: [number, number][][] = [
    [
      [0, 4],
      [0, 12],
      [0, 16],
    ],
    [
      [1, 3],
      [2, 11],
      [5, 14],
    ],
  ];
  const jobs = [0, 1, 0, 1, 1, 0].flatMap((a, k) => {
    const sel = boxes[k % 2]!;
    return [
      { a, sel, got: readArrayLayout(store, `v${a}`).then((l) => readArrayRegion(store, `v${a}`, l, sel)) },
    ];
  });
  for (const { a, sel, got } of jobs) {
    const data = await got;
    let i = 0;
    for (let t = sel[0]![0]; t < sel[0]![1]; t++)
      for (let y = sel[1]![0]; y < sel[1]![1]; y++)
        for (let x = sel[2]![0]; x < sel[2]![1]; x++)
          assert.equal(data[i++], value(a, t, y, x), `v${a} [${t},${y},${x}]`);
    assert.equal(i, data.length);
  }
});

it("readRecord of a record whose commit grew the array between its zarr.json and manifest reads", async () => {
  const inner = new MemoryStore();
  const value = (t: number, y: number, x: number) => 1000 * t + 10 * y + x;
  await putGridArray(inner, "u", [4, 6, 8], value);
  await putManifest(inner, gridManifest(4));
  // zarr.json is read first (the old shape, 4 records); before the manifest read answers, a commit grows
  // the array to 6 records (zarr.json, then shards, then the manifest, the writer's order).
  let zarrJsonRead = false;
  const store: ReadableStore = {
    url: inner.url,
    get: async (key) => {
      if (key === "u/zarr.json") zarrJsonRead = true;
      if (key === "output_manifest.json" && zarrJsonRead) {
        await putGridArray(inner, "u", [6, 6, 8], value);
        await putManifest(inner, gridManifest(6));
      }
      return inner.get(key);
    },
    getRange: (key, offset, length) => inner.getRange(key, offset, length),
    getSuffix: (key, n) => inner.getSuffix(key, n),
    size: (key) => inner.size(key),
  };
  const got = await readRecord(store, "u", 5, { y: [1, 3] });
  assert.deepEqual(got.shape, [2, 8]);
  assert.deepEqual(
    Array.from(got.data as Float64Array),
    [1, 2].flatMap((y) => Array.from({ length: 8 }, (_, x) => value(5, y, x))),
  );
});
