// The write phase of the `single` contender alone, for profiling:
//   node --cpu-prof bench/profile-write.mjs WORKLOAD.json STORE_DIR     (JS thread)
//   perf record -g node --perf-basic-prof bench/profile-write.mjs ...   (every thread, codecs included)
// WORKLOAD.json: JSON.stringify(defaultWorkload()) from workload.mjs. Keeps the store for profile-read.mjs.
import { readFileSync, rmSync } from "node:fs";
import { FsStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";
import { makePool, streamSchema, totalBytes } from "./workload.mjs";

const wl = JSON.parse(readFileSync(process.argv[2], "utf8"));
const pool = makePool(wl);
const dir = process.argv[3];
rmSync(dir, { recursive: true, force: true });
const store = new FsStore(dir);
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const w = await ZarrStreamWriter.create(store, streamSchema(wl), { kind: "single" });
for (let r = 0; r < wl.records; r++) {
  const rec = {};
  wl.vars.forEach((v, k) => {
    rec[v.name] = pool[k][r % wl.pool];
  });
  {
    const c0 = process.cpuUsage();
    await w.writeRecord(3600 * r, rec);
    const c = process.cpuUsage(c0);
    globalThis.wr = (globalThis.wr ?? 0) + c.user + c.system;
  }
  if ((r + 1) % wl.commit_every === 0) {
    const c0 = process.cpuUsage();
    await w.flush();
    const c = process.cpuUsage(c0);
    globalThis.fl = (globalThis.fl ?? 0) + c.user + c.system;
  }
}
await w.close();
const s = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
console.log("writeRecord", globalThis.wr / 1e6, "flush", globalThis.fl / 1e6);
console.log(
  JSON.stringify({ MBps: totalBytes(wl) / 1e6 / s, s, cpu_user: cpu.user / 1e6, cpu_sys: cpu.system / 1e6 }),
);
