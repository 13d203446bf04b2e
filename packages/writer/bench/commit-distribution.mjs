// The distribution behind the manifest curve's ratios: the curve takes the best of 15 sub-millisecond
// timings per point, which swings from run to run; this makes many one-record commits at one size of the
// curve's indexed workload (tiny records, shards of 8 on a time axis of RECORDS, a Single writer on a
// MemoryStore, the measured records mid-axis) and prints min / p10 / median of each commit, of a read of
// record 0 straight after it and of a second read (docs/manifest-pages.md). The store is created paged, as
// the curve's paged points are.
//   node bench/commit-distribution.mjs [RECORDS=100000] [COMMITS=400]
import { readRecord } from "@zarr-stream/reader";
import { MemoryStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";

const n = Number(process.argv[2] ?? 100000);
const commits = Math.min(n, Number(process.argv[3] ?? 400));
const schema = {
  dims: [
    ["time", 0],
    ["x", 1],
  ],
  time_dim: "time",
  time_mode: { indexed: { times: Array.from({ length: n }, (_, i) => i) } },
  vars: [{ name: "v", dims: ["time", "x"], dtype: "float32" }],
  statics: [],
  chunk_shape: { time: 1, x: 1 },
  shard_shape: { time: 8, x: 1 },
  profile: "diagnostic",
};
const store = new MemoryStore();
const w = await ZarrStreamWriter.create(store, schema, { kind: "single" }, {}, { manifestPages: true });
const one = new Float32Array(1);
const from = Math.floor((n - commits) / 2);
for (let r = 0; r < n; r++) {
  if (r >= from && r < from + commits) continue;
  one[0] = r;
  await w.writeRecordAt(r, r, { v: one });
  if ((r + 1) % 1000 === 0 || r + 1 === n) await w.flush();
}
const timings = { commit: [], "first read": [], "steady read": [] };
const timed = async (name, f) => {
  const t0 = performance.now();
  await f();
  timings[name].push(performance.now() - t0);
};
for (let k = 0; k < commits; k++) {
  one[0] = from + k;
  await timed("commit", async () => {
    await w.writeRecordAt(from + k, from + k, { v: one });
    await w.flush();
  });
  await timed("first read", () => readRecord(store, "v", 0));
  await timed("steady read", () => readRecord(store, "v", 0));
}
for (const [name, xs] of Object.entries(timings)) {
  xs.sort((a, b) => a - b);
  const at = (q) => xs[Math.floor(q * (xs.length - 1))].toFixed(3);
  console.log(`${n} records, ${name} ms: min ${at(0)} p10 ${at(0.1)} median ${at(0.5)}`);
}
