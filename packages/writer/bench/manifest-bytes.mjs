// Manifest bytes per one-record commit, in both forms of the manifest (docs/manifest-pages.md): through
// the real writer on a MemoryStore, tiny records in time shards of 8 (the manifest curve's workload), an
// owner in append mode and a Single writer in indexed mode. Per point it prints the stored manifest's
// size and the bytes put to the manifest and its pages by each of COMMITS one-record commits (append: the
// next record; indexed: records mid-axis, each in a page of its own's block) as min / max. Sizes only,
// no timings, so it runs in seconds where the bench's curve runs in minutes.
//   node bench/manifest-bytes.mjs [RECORDS,...=1000,10000,100000] [COMMITS=3]
import { MANIFEST_KEY } from "@zarr-stream/reader";
import { MemoryStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";

const sizes = (process.argv[2] ?? "1000,10000,100000").split(",").map(Number);
const commits = Number(process.argv[3] ?? 3);
const PAGES = ".zarr-stream/manifest/";

/** Counts the bytes put to the manifest and its pages. */
class CountingStore extends MemoryStore {
  put_bytes = 0;
  async putIfVersion(key, bytes, expected) {
    if (key === MANIFEST_KEY || key.startsWith(PAGES)) this.put_bytes += bytes.byteLength;
    return super.putIfVersion(key, bytes, expected);
  }
}

const schema = (timeMode) => ({
  dims: [
    ["time", 0],
    ["x", 1],
  ],
  time_dim: "time",
  time_mode: timeMode,
  vars: [{ name: "v", dims: ["time", "x"], dtype: "float32" }],
  statics: [],
  chunk_shape: { time: 1, x: 1 },
  shard_shape: { time: 8, x: 1 },
  profile: "diagnostic",
});

/** Builds a store of n records (committing every 10,000: only the measured commits count), then measures. */
async function point(mode, n, paged) {
  const store = new CountingStore();
  const one = new Float32Array(1);
  const opts = { manifestPages: paged };
  const perCommit = [];
  const measure = async (commit) => {
    store.put_bytes = 0;
    await commit();
    perCommit.push(store.put_bytes);
  };
  if (mode === "append") {
    const w = await ZarrStreamWriter.create(
      store,
      schema("append"),
      { kind: "owner", nWriters: 1 },
      {},
      opts,
    );
    for (let r = 0; r < n; r++) {
      await w.writeRecord(r, { v: one });
      if ((r + 1) % 10_000 === 0 || r + 1 === n) await w.commit([await w.flush()]);
    }
    for (let k = 0; k < commits; k++)
      await measure(async () => {
        await w.writeRecord(n + k, { v: one });
        await w.commit([await w.flush()]);
      });
  } else {
    const times = Array.from({ length: n }, (_, i) => i);
    const w = await ZarrStreamWriter.create(
      store,
      schema({ indexed: { times } }),
      { kind: "single" },
      {},
      opts,
    );
    // One measured record per 512-record block, mid-axis: each commit rewrites a page of its own.
    const picked = Array.from({ length: commits }, (_, k) => Math.floor(n / 2) + k * 512).filter(
      (i) => i < n,
    );
    for (let r = 0; r < n; r++) {
      if (picked.includes(r)) continue;
      await w.writeRecordAt(r, r, { v: one });
      if ((r + 1) % 10_000 === 0 || r + 1 === n) await w.flush();
    }
    for (const i of picked)
      await measure(async () => {
        await w.writeRecordAt(i, i, { v: one });
        await w.flush();
      });
  }
  const stored = (await store.get(MANIFEST_KEY)).byteLength;
  return {
    mode,
    records: n,
    form: paged ? "paged" : "seed",
    stored,
    min: Math.min(...perCommit),
    max: Math.max(...perCommit),
  };
}

for (const mode of ["append", "indexed"])
  for (const n of sizes)
    for (const paged of [false, true]) {
      const p = await point(mode, n, paged);
      console.log(
        `${p.mode.padEnd(7)} ${String(p.records).padStart(6)} ${p.form.padEnd(5)} stored ${p.stored} B, per commit ${p.min}..${p.max} B`,
      );
    }
