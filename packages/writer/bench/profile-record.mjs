// One record's region of every variable (as the bench's read_record: one store handle, buffers the caller
// owns), read cold (page cache dropped first; needs root) and warm, over a store written by
// profile-write.mjs: prints min and median of each, and the process's CPU time per warm read.
//   node bench/profile-record.mjs WORKLOAD.json STORE_DIR [reps]
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { readRecord } from "@zarr-stream/reader";
import { allocTypedUnfilled } from "@zarr-stream/shard";
import { FsStore } from "@zarr-stream/store";

const wl = JSON.parse(readFileSync(process.argv[2], "utf8"));
const dir = process.argv[3];
const reps = Number(process.argv[4] ?? 7);
const [[a, b], [c, d]] = wl.read_region;
const store = new FsStore(dir);
const outs = wl.vars.map((v) => allocTypedUnfilled(v.dtype, (b - a) * (d - c)));
const readOne = async (record) => {
  return Promise.all(
    wl.vars.map((v, k) => readRecord(store, v.name, record, { lat: [a, b], lon: [c, d] }, { out: outs[k] })),
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
let warmCpu = 0;
for (let i = 0; i < reps; i++) {
  // A different record each time, so the cold read does not meet what the last warm reads cached.
  const record = (i * 11 + 10) % wl.records;
  dropCaches();
  let t = performance.now();
  await readOne(record);
  cold.push(performance.now() - t);
  for (let k = 0; k < 3; k++) {
    const cpu0 = process.cpuUsage();
    t = performance.now();
    await readOne(record);
    warm.push(performance.now() - t);
    const cpu = process.cpuUsage(cpu0);
    warmCpu += (cpu.user + cpu.system) / 1000;
  }
}
console.log(
  `record read over ${reps} records: cold ${summary(cold)}; warm ${summary(warm)}, cpu ${(warmCpu / warm.length).toFixed(2)} ms per warm read`,
);
