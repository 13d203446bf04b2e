// The write phase of the `single` contender alone, for profiling:
//   node --cpu-prof bench/profile-write.mjs WORKLOAD.json STORE_DIR     (JS thread)
//   perf record -g node --perf-basic-prof bench/profile-write.mjs ...   (every thread, codecs included)
// WORKLOAD.json: JSON.stringify(defaultWorkload()) from workload.mjs. Keeps the store for profile-read.mjs.
import { readFileSync, rmSync } from "node:fs";
import { FsStore } from "@zarr-stream/store";
import { makePool, totalBytes } from "./workload.mjs";
import { writeSingle } from "./write-single.mjs";

const wl = JSON.parse(readFileSync(process.argv[2], "utf8"));
const pool = makePool(wl);
const dir = process.argv[3];
rmSync(dir, { recursive: true, force: true });
const store = new FsStore(dir);
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await writeSingle(wl, pool, store);
const s = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
console.log(
  JSON.stringify({ MBps: totalBytes(wl) / 1e6 / s, s, cpu_user: cpu.user / 1e6, cpu_sys: cpu.system / 1e6 }),
);
