import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, it } from "node:test";
import { profileCodec } from "@zarr-stream/codecs";
import { type ArrayLayout, arrayZarrJson, encodeShard, encodeZarrJson, shardKey } from "@zarr-stream/shard";
import { FsStore } from "@zarr-stream/store";
import { readArrayLayout, readArrayRegion } from "../src/index.js";

// readArrayRegion reads shard windows into buffers it keeps between calls (one per concurrent shard
// read, via FsStore.getSuffixInto). Calls running at once must never share one: each result is checked
// value by value against the formula that built the store.
const root = mkdtempSync(join(tmpdir(), "zs-reader-conc-"));
after(() => rmSync(root, { recursive: true, force: true }));

it("concurrent whole-array and box reads on FsStore return their own values (window buffers never shared)", async () => {
  const store = new FsStore(root);
  const value = (a: number, t: number, y: number, x: number) => 1e6 * a + 1000 * t + 10 * y + x;
  const layouts: ArrayLayout[] = [0, 1].map(() => ({
    shape: [4, 12, 16],
    shardShape: [2, 3, 4],
    chunkShape: [1, 3, 2],
    dtype: "float64",
    codec: profileCodec("diagnostic", "float64"),
    dimensionNames: ["time", "y", "x"],
    attributes: {},
  }));
  for (const [a, layout] of layouts.entries()) {
    await store.put(`v${a}/zarr.json`, encodeZarrJson(arrayZarrJson(layout)));
    for (let st = 0; st < 2; st++)
      for (let sy = 0; sy < 4; sy++)
        for (let sx = 0; sx < 4; sx++) {
          const data = new Float64Array(24);
          for (let t = 0; t < 2; t++)
            for (let y = 0; y < 3; y++)
              for (let x = 0; x < 4; x++)
                data[t * 12 + y * 4 + x] = value(a, st * 2 + t, sy * 3 + y, sx * 4 + x);
          await store.put(shardKey(`v${a}`, [st, sy, sx]), await encodeShard(layout, [st, sy, sx], data));
        }
  }
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
