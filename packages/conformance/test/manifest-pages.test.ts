// A store created paged (packages/spec/docs/manifest-pages.md, WriterOptions.manifestPages) read by every
// reader: the arrays are plain Zarr, so
// zarr-python and TensorStore read them as ever; the committed set comes from the manifest with its
// pages resolved, by the reader package and by python/manifest_pages.py alike.
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import {
  fillGenerated,
  MANIFEST_INDEX_PAGE_SIZE,
  MANIFEST_PAGE_SIZE,
  OUTPUT_MANIFEST_V2_PAGED,
  type StreamSchema,
} from "@zarr-stream/spec";
import { FsStore } from "@zarr-stream/store";
import { findPython } from "@zarr-stream/test-support/python";
import { ZarrStreamWriter } from "@zarr-stream/writer";
import { dumpStore, PythonContributor, runPythonReader } from "../src/index.js";

const pythonProbe = findPython({ modules: ["numpy", "zarr", "tensorstore"] });
const contributorProbe = findPython({ modules: ["numpy", "zarr"] });
const P = MANIFEST_PAGE_SIZE;
const R = MANIFEST_INDEX_PAGE_SIZE;
/** Records committed in the store whose record page refs live in index pages. */
const DEEP = [0, 7, R * P + 3];

let out: string;
before(async () => {
  out = await mkdtemp(join(tmpdir(), "zs-pages-"));
});
after(async () => {
  await rm(out, { recursive: true, force: true });
});

const schema = (timeMode: StreamSchema["time_mode"]): StreamSchema => ({
  dims: [
    ["time", 0],
    ["x", 3],
  ],
  time_dim: "time",
  time_mode: timeMode,
  vars: [{ name: "v", dims: ["time", "x"], dtype: "float64" }],
  statics: [],
  chunk_shape: { time: 1, x: 3 },
  shard_shape: { time: 1, x: 3 },
  profile: "diagnostic",
});
const rec = (r: number) => ({ v: Float64Array.of(r, r + 0.5, -r) });
const PAGED = { manifestPages: true } as const;

/**
 * Indexed: a few records committed on a time axis longer than a page, and on one longer than an index
 * page's worth of pages. Append: more time shards than a page.
 */
async function pagedStores(): Promise<Record<string, string>> {
  const indexed = join(out, "indexed.zarr");
  const times = Array.from({ length: P + 40 }, (_, i) => i * 60);
  const a = await ZarrStreamWriter.create(
    new FsStore(indexed),
    schema({ indexed: { times } }),
    { kind: "single" },
    {},
    PAGED,
  );
  for (const i of [0, 7, P, P + 39]) await a.writeRecordAt(i, times[i]!, rec(i));
  await a.close();
  const append = join(out, "append.zarr");
  const owner = { kind: "owner", nWriters: 1 } as const;
  const b = await ZarrStreamWriter.create(new FsStore(append), schema("append"), owner, {}, PAGED);
  for (let r = 0; r < P + 9; r++) {
    await b.writeRecord(r * 10, rec(r));
    if ((r + 1) % 100 === 0 || r === P + 8) await b.commit([await b.flush()]);
  }
  await b.close();
  const deep = join(out, "indexed-deep.zarr");
  const deepTimes = Array.from({ length: (R + 1) * P + 40 }, (_, i) => i * 60);
  const c = await ZarrStreamWriter.create(
    new FsStore(deep),
    schema({ indexed: { times: deepTimes } }),
    { kind: "single" },
    {},
    PAGED,
  );
  for (const i of DEEP) await c.writeRecordAt(i, deepTimes[i]!, rec(i));
  await c.close();
  return { indexed, append, "indexed-deep": deep };
}

test(
  "zarr-python and TensorStore dumps of paged stores match the reader package's",
  { skip: pythonProbe.skip },
  async () => {
    const stores = await pagedStores();
    for (const [name, dir] of Object.entries(stores)) {
      const manifest = JSON.parse(await readFile(join(dir, "output_manifest.json"), "utf8"));
      const refs = manifest.records?.pages ?? manifest.records?.page_index ?? manifest.time_shard_pages;
      assert.ok(refs, `${name}: the manifest is paged`);
      assert.equal(manifest.records?.page_index !== undefined, name === "indexed-deep", name);
    }
    const ours = Object.fromEntries(
      await Promise.all(
        Object.entries(stores).map(
          async ([name, dir]) => [name, await dumpStore(new FsStore(dir), name)] as const,
        ),
      ),
    );
    assert.deepEqual(
      ours.indexed!.records.map((r) => r.index),
      [0, 7, P, P + 39],
    );
    assert.equal(ours.append!.records.length, P + 9);
    assert.deepEqual(
      ours["indexed-deep"]!.records.map((r) => r.index),
      DEEP,
    );
    for (const reader of ["zarr-python", "tensorstore"] as const) {
      const jobs = Object.entries(stores).map(([name, dir]) => ({
        store: dir,
        case: name,
        out: join(out, `${name}-${reader}.json`),
      }));
      await runPythonReader(pythonProbe.require(), reader, jobs, out);
      for (const job of jobs) {
        const theirs = JSON.parse(await readFile(job.out, "utf8"));
        const mine = ours[job.case]!;
        assert.deepEqual(
          theirs.records,
          JSON.parse(JSON.stringify(mine.records)),
          `${reader} ${job.case} records`,
        );
        assert.equal(theirs.commit_seq, mine.commit_seq);
      }
    }
  },
);

test(
  "the Python contributor joins a paged store, resolving its pages, and its records commit",
  { skip: contributorProbe.skip },
  async () => {
    const dir = join(out, "paged-python-contributor.zarr");
    const two: StreamSchema = {
      ...schema("append"),
      dims: [
        ["time", 0],
        ["x", 4],
      ],
      chunk_shape: { time: 1, x: 2 },
      shard_shape: { time: 1, x: 2 },
    };
    const seeds = { v: 11 };
    const ownerRegion = { x: [0, 2] as [number, number] };
    const owner = await ZarrStreamWriter.create(
      new FsStore(dir),
      two,
      { kind: "owner", nWriters: 2 },
      ownerRegion,
      PAGED,
    );
    const ownRecord = async (r: number) => {
      const a = fillGenerated("float64", seeds.v, r, ["x"], ownerRegion) as Float64Array;
      await owner.writeRecord(r * 10, { v: a });
    };
    // Writer 1 in Python from the first record: more time shards than a page, so the manifest pages.
    const n = P + 4;
    let py = new PythonContributor(contributorProbe.require(), dir);
    try {
      await py.join(1, { x: [2, 4] }, seeds);
      for (let r = 0; r < n; r++) {
        await py.writeRecord(r * 10, r);
        await ownRecord(r);
        if ((r + 1) % 200 === 0 || r + 1 === n) await owner.commit([await owner.flush(), await py.flush()]);
      }
      await py.close();
    } finally {
      await py.dispose();
    }
    const stored = JSON.parse(await readFile(join(dir, "output_manifest.json"), "utf8"));
    assert.equal(stored.schema, OUTPUT_MANIFEST_V2_PAGED);
    assert.equal(stored.time_shard_pages.length, 1);
    // A second Python process joins the paged store: it resolves the pages to find the committed count.
    py = new PythonContributor(contributorProbe.require(), dir);
    try {
      await py.join(1, { x: [2, 4] }, seeds);
      await py.writeRecord(n * 10, n);
      await ownRecord(n);
      await owner.commit([await owner.flush(), await py.flush()]);
      await py.close();
    } finally {
      await py.dispose();
    }
    const d = await dumpStore(new FsStore(dir), "paged-python-contributor");
    assert.equal(d.manifest_schema, OUTPUT_MANIFEST_V2_PAGED);
    assert.equal(d.records.length, n + 1);
    const last = d.records.at(-1)!.vars.v as { data_b64: string };
    const got = new Float64Array(Uint8Array.from(Buffer.from(last.data_b64, "base64")).buffer);
    const want = fillGenerated("float64", seeds.v, n, ["x"], { x: [0, 4] });
    assert.deepEqual([...got], [...(want as Float64Array)]);
  },
);
