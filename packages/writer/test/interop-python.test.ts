import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { readArrayLayout, readArrayRegion } from "@zarr-stream/reader";
import { FsStore } from "@zarr-stream/store";
// The shard package's tests own the Python batch runner (python/zsinterop.py); reuse it, don't copy it.
import {
  interopPython,
  type InteropJob as Job,
  readBin,
  runInteropJobs as runJobs,
} from "@zarr-stream/test-support/python";
import { ZarrStreamWriter } from "../src/index.js";
import { gridSchema, ownerAndContributor, recordArrays, staticArray } from "./helpers.js";

const { skip } = interopPython();

describe("stores written here open in zarr-python 3 and TensorStore", { skip }, () => {
  it("a 2-writer v2 store with statics and a Single v1 store read back equal, bitwise", async () => {
    const root = mkdtempSync(join(tmpdir(), "zs-interop-"));
    try {
      const multi = join(root, "multi");
      const store = new FsStore(multi);
      const schema = gridSchema(
        {
          profile: "checkpoint",
          statics: [{ name: "area", dims: ["lat", "lon"], dtype: "float32" }],
          vars: [
            { name: "temperature", dims: ["lat", "time", "lon"], dtype: "float64" },
            { name: "zonal", dims: ["time", "lon"], dtype: "float32" },
            { name: "count", dims: ["time", "lat"], dtype: "int32" },
            { name: "flag", dims: ["lon", "time"], dtype: "uint8" },
          ],
        },
        true,
      );
      const { owner, c } = await ownerAndContributor(store, schema);
      for (let r = 0; r < 5; r++) {
        await owner.writeRecord(r * 10, recordArrays(schema, r, { lat: [0, 2] }));
        await c.writeRecord(
          r * 10,
          recordArrays(schema, r, { lat: [2, 4] }, (_, p) => p),
        );
        if (r === 2) await owner.commit([await owner.flush(), await c.flush()]);
      }
      await owner.writeStatic("area", staticArray(schema, "area", { lat: [0, 2] }));
      await c.writeStatic("area", staticArray(schema, "area", { lat: [2, 4] }));
      await owner.close([await c.flush()]);

      const single = join(root, "single");
      const wasm = gridSchema({ profile: "wasm" });
      const s = await ZarrStreamWriter.create(new FsStore(single), wasm, { kind: "single" });
      for (let r = 0; r < 3; r++) await s.writeRecord(r, recordArrays(wasm, r, {}));
      await s.close();

      const arrays: [string, string, FsStore][] = [
        ...["temperature", "zonal", "count", "flag", "area", "time", "lat"].map(
          (a) => [multi, a, store] as [string, string, FsStore],
        ),
        ...["temperature", "zonal", "total", "time"].map(
          (a) => [single, a, new FsStore(single)] as [string, string, FsStore],
        ),
      ];
      const jobs: Job[] = [];
      arrays.forEach(([dir, array], i) => {
        for (const engine of ["zarr", "tensorstore"] as const) {
          jobs.push({ op: "read", engine, root: dir, array, out: join(root, `${i}-${engine}.bin`) });
        }
      });
      const results = runJobs(jobs);
      for (const [i, [, array, st]] of arrays.entries()) {
        const layout = await readArrayLayout(st, array);
        const ours = await readArrayRegion(
          st,
          array,
          layout,
          layout.shape.map((n) => [0, n]),
        );
        const bytes = new Uint8Array(ours.buffer, ours.byteOffset, ours.byteLength);
        for (const [k, engine] of ["zarr", "tensorstore"].entries()) {
          const r = results[i * 2 + k] as { shape: number[] };
          assert.deepEqual(r.shape, layout.shape, `${array} shape in ${engine}`);
          assert.ok(bytes.length > 0);
          assert.deepEqual(readBin(join(root, `${i}-${engine}.bin`)), bytes, `${array} in ${engine}`);
        }
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
