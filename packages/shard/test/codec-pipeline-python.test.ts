import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { TypedArray } from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import {
  interopPython,
  type InteropJob as Job,
  readBin,
  runInteropJobs as runJobs,
} from "@zarr-stream/test-support/python";
import { filledTyped, typedFromBytes } from "../src/dtype.js";
import { forEachIndex } from "../src/grid.js";
import { chunkKey, copyStrided, encodeZarrJson, openZarrArray } from "../src/index.js";
import { bytesOf, product, randomBytes } from "./helpers.js";

const BYTES_LE = { name: "bytes", configuration: { endian: "little" } };
const BYTES_BE = { name: "bytes", configuration: { endian: "big" } };

/** Arrays only the codec model writes: [name, data_type, shape, chunk shape, fill, codecs]. */
const CASES: [string, "float64" | "int32" | "uint64", number[], number[], number, object[]][] = [
  ["gzip_fill", "float64", [7, 5], [3, 2], -2.5, [BYTES_LE, { name: "gzip", configuration: { level: 5 } }]],
  [
    "transpose_zstd_crc",
    "int32",
    [5, 4, 3],
    [2, 4, 2],
    0,
    [
      { name: "transpose", configuration: { order: [2, 0, 1] } },
      BYTES_BE,
      { name: "zstd", configuration: { level: 3, checksum: true } },
      { name: "crc32c" },
    ],
  ],
  [
    "sharded_general",
    "uint64",
    [9, 6],
    [4, 6],
    7,
    [
      {
        name: "sharding_indexed",
        configuration: {
          chunk_shape: [2, 3],
          codecs: [
            { name: "transpose", configuration: { order: [1, 0] } },
            BYTES_BE,
            { name: "gzip", configuration: { level: 1 } },
          ],
          index_codecs: [BYTES_LE, { name: "crc32c" }],
          index_location: "start",
        },
      },
    ],
  ],
];

test(
  "arrays written through the codec model (gzip, transpose, big-endian, zstd + crc32c, general sharding, nonzero fill) read bitwise in zarr-python 3 and TensorStore",
  { skip: interopPython().skip },
  async () => {
    const root = mkdtempSync(join(tmpdir(), "zs-codec-model-out-"));
    const store = new FsStore(root);
    const expected = new Map<string, Uint8Array>();
    const jobs: Job[] = [];
    for (const [i, [name, dtype, shape, chunks, fill, codecs]] of CASES.entries()) {
      const doc = {
        zarr_format: 3,
        node_type: "array",
        shape,
        data_type: dtype,
        chunk_grid: { name: "regular", configuration: { chunk_shape: chunks } },
        chunk_key_encoding: { name: "default", configuration: { separator: "/" } },
        fill_value: fill,
        codecs,
      };
      const array = openZarrArray(doc, `${name}/zarr.json`);
      const size = { float64: 8, int32: 4, uint64: 8 }[dtype];
      const data = typedFromBytes(dtype, randomBytes(product(shape) * size, 100 + i));
      if (dtype === "float64")
        (data as Float64Array).forEach((v, k, a) => {
          if (Number.isNaN(v)) a[k] = k;
        });
      // One chunk left out entirely: it reads as fill on every side.
      const grid = shape.map((n, d) => Math.ceil(n / chunks[d]!));
      const skipped = grid.map(() => 0);
      const full = filledTyped(dtype, product(shape), array.fill);
      const writes: Promise<void>[] = [];
      forEachIndex(
        grid.map(() => 0),
        grid,
        (idx) => {
          const origin = idx.map((k, d) => k * chunks[d]!);
          const count = origin.map((o, d) => Math.min(chunks[d]!, shape[d]! - o));
          if (idx.every((k, d) => k === skipped[d])) return;
          const chunk: TypedArray = filledTyped(dtype, product(chunks), array.fill);
          copyStrided(
            data,
            shape,
            origin,
            chunk,
            chunks,
            origin.map(() => 0),
            count,
          );
          copyStrided(data, shape, origin, full, shape, origin, count);
          const key = chunkKey(name, array, idx);
          writes.push(array.pipeline.encode(chunk).then((b) => store.put(key, b)));
        },
      );
      await Promise.all(writes);
      await store.put(`${name}/zarr.json`, encodeZarrJson(doc));
      expected.set(name, bytesOf(full));
      for (const engine of ["zarr", "tensorstore"] as const)
        jobs.push({ op: "read", engine, root, array: name, out: join(root, `${name}.${engine}.bin`) });
    }
    const results = runJobs(jobs);
    results.forEach((r, i) => {
      const job = jobs[i]!;
      assert.deepEqual(
        r.shape,
        CASES.find((c) => c[0] === job.array)![2],
        `${job.engine} ${job.array} shape`,
      );
      const got = readBin(job.out as string);
      assert.ok(
        Buffer.from(got).equals(Buffer.from(expected.get(job.array)!)),
        `${job.engine} ${job.array} bitwise`,
      );
    });
  },
);
