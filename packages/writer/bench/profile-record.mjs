// One record's region of every variable (as the bench's read_record), read cold (page cache dropped
// first; needs root) and warm, over a store written by profile-write.mjs: prints min and median of each.
//   node bench/profile-record.mjs WORKLOAD.json STORE_DIR [reps]
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { readOutputManifest, readRecord } from "@zarr-stream/reader";
import { FsStore } from "@zarr-stream/store";

const wl = JSON.parse(readFileSync(process.argv[2], "utf8"));
const dir = process.argv[3];
const reps = Number(process.argv[4] ?? 7);
const [[a, b], [c, d]] = wl.read_region;
const readOne = async (record) => {
  const store = new FsStore(dir);
  const manifest = await readOutputManifest(store);
  return Promise.all(
    wl.vars.map((v) => readRecord(store, v.name, record, { lat: [a, b], lon: [c, d] }, { manifest })),
  );
};
const dropCaches = () => {
  execFileSync("sync");
  writeFileSync("/proc/sys/vm/drop_caches", "3\n");
};
const summary = (ts) => {
  const s = [...ts].sort((x, y) => x - y);
  return `min ${s[0].toFixed(1)} ms, median ${s[Math.floor(s.length / 2)].toFixed(1)} ms`;
};
await readOne(0);
const cold = [];
const warm = [];
for (let i = 0; i < reps; i++) {
  // A different record each time, so the cold read does not meet what the last warm reads cached.
  const record = (i * 11 + 10) % wl.records;
  dropCaches();
  let t = performance.now();
  await readOne(record);
  cold.push(performance.now() - t);
  for (let k = 0; k < 3; k++) {
    t = performance.now();
    await readOne(record);
    warm.push(performance.now() - t);
  }
}
console.log(`record read over ${reps} records: cold ${summary(cold)}; warm ${summary(warm)}`);
