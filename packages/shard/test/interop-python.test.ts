import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { FsStore } from "@zarr-stream/store";
import {
  interopPython,
  type InteropJob as Job,
  readBin,
  runInteropJobs as runJobs,
} from "@zarr-stream/test-support/python";
import { itemSize } from "../src/index.js";
import { bytesOf } from "./helpers.js";
import {
  type ArrayCase,
  CASES,
  caseData,
  layoutOfCase,
  readArrayBox,
  readArrayWhole,
  sliceBox,
  writeArray,
  writeGroup,
} from "./interop-cases.js";

const { skip } = interopPython();
const ENGINES = ["zarr", "tensorstore"] as const;

test(
  "§1 arrays zarr-stream writes read bitwise in zarr-python 3 and TensorStore (every profile, 7 dtypes, ragged edges)",
  { skip },
  async () => {
    const root = mkdtempSync(join(tmpdir(), "zs-shard-out-"));
    const store = new FsStore(root);
    await writeGroup(store, { title: "interop", Conventions: "CF-1.8" });
    const expected = new Map<string, Uint8Array>();
    const jobs: Job[] = [];
    for (const [i, c] of CASES.entries()) {
      const data = caseData(c, 1000 + i);
      await writeArray(store, c.name, layoutOfCase(c), data);
      expected.set(c.name, bytesOf(data));
      for (const engine of ENGINES) {
        jobs.push({ op: "read", engine, root, array: c.name, out: join(root, `${c.name}.${engine}.bin`) });
      }
    }
    const results = runJobs(jobs);
    results.forEach((r, i) => {
      const job = jobs[i]!;
      const c = CASES.find((x) => x.name === job.array)!;
      assert.deepEqual(r.shape, c.shape, `${job.engine} ${c.name} shape`);
      assert.equal(r.dtype, c.dtype, `${job.engine} ${c.name} dtype`);
      const got = readBin(job.out as string);
      assert.ok(
        Buffer.from(got).equals(Buffer.from(expected.get(c.name)!)),
        `${job.engine} read ${c.name} bitwise`,
      );
    });
  },
);

interface Variant {
  engine: "zarr" | "tensorstore";
  compressor: Record<string, unknown>;
  indexLocation?: "start" | "end";
  label: string;
}

function variantsFor(c: ArrayCase): Variant[] {
  const compressor =
    c.profile === "wasm"
      ? { zstd: { level: 5, checksum: false } }
      : { blosc: { clevel: c.profile === "diagnostic" ? 5 : 7, shuffle: "shuffle" } };
  return ENGINES.map((engine) => ({ engine, compressor, label: `${engine}-${c.profile}` }));
}

/** Spellings other writers produce that the profiles never do, but that a reader must still decode. */
const EXTRA: [ArrayCase, Variant][] = [
  [
    CASES[0]!,
    { engine: "zarr", compressor: { blosc: { clevel: 3, shuffle: "noshuffle" } }, label: "zarr-noshuffle" },
  ],
  [
    CASES[1]!,
    { engine: "zarr", compressor: { blosc: { clevel: 5, shuffle: "bitshuffle" } }, label: "zarr-bitshuffle" },
  ],
  [
    CASES[2]!,
    { engine: "zarr", compressor: { zstd: { level: 3, checksum: true } }, label: "zarr-zstd-checksum" },
  ],
  [
    CASES[4]!,
    { engine: "zarr", compressor: { zstd: { level: 5 } }, indexLocation: "start", label: "zarr-index-start" },
  ],
  [
    CASES[0]!,
    {
      engine: "tensorstore",
      compressor: { blosc: { clevel: 5, shuffle: "shuffle" } },
      indexLocation: "start",
      label: "ts-index-start",
    },
  ],
];

test(
  "§1 arrays zarr-python 3 and TensorStore write decode bitwise here (decodeShard and readShardRegion)",
  { skip },
  async () => {
    const root = mkdtempSync(join(tmpdir(), "zs-shard-in-"));
    const store = new FsStore(root);
    const plan: { c: ArrayCase; v: Variant; path: string; data: Uint8Array }[] = [];
    const all: [ArrayCase, Variant][] = [
      ...CASES.flatMap((c) => variantsFor(c).map((v): [ArrayCase, Variant] => [c, v])),
      ...EXTRA,
    ];
    const jobs: Job[] = all.map(([c, v], i) => {
      const path = `${v.label}-${c.name}`;
      const data = bytesOf(caseData(c, 2000 + i));
      const input = join(root, `${path}.bin`);
      writeFileSync(input, data);
      plan.push({ c, v, path, data });
      return {
        op: "write",
        engine: v.engine,
        root,
        array: path,
        input,
        dtype: c.dtype,
        shape: c.shape,
        shard_shape: c.shardShape,
        chunk_shape: c.chunkShape,
        dims: c.dims,
        compressor: v.compressor,
        index_location: v.indexLocation ?? "end",
      };
    });
    runJobs(jobs);
    for (const { c, v, path, data } of plan) {
      const { layout, data: got } = await readArrayWhole(store, path);
      assert.deepEqual(layout.shape, c.shape);
      assert.deepEqual(layout.dimensionNames, c.dims);
      assert.equal(layout.indexLocation ?? "end", v.indexLocation ?? "end");
      if (layout.codec.kind === "blosc") assert.equal(layout.codec.typesize, itemSize(c.dtype));
      assert.ok(Buffer.from(bytesOf(got)).equals(Buffer.from(data)), `decodeShard ${path} bitwise`);

      // a box that crosses shard and inner-chunk boundaries and touches the ragged edge
      const lo = c.shape.map((n) => Math.floor(n / 3));
      const hi = c.shape.map((n) => n);
      const box = await readArrayBox(store, path, layout, lo, hi);
      const want = sliceBox(got, c.shape, lo, hi, c.dtype);
      assert.ok(
        Buffer.from(bytesOf(box)).equals(Buffer.from(bytesOf(want))),
        `readShardRegion ${path} bitwise`,
      );
    }
  },
);
