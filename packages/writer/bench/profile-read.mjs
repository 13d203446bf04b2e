// Read-all passes over a store written by profile-write.mjs, for profiling (see there); prints MB/s and the
// process's CPU time (user, sys) per pass (read-all.mjs).
import { readFileSync } from "node:fs";
import { FsStore } from "@zarr-stream/store";
import { readAll } from "./read-all.mjs";

const wl = JSON.parse(readFileSync(process.argv[2], "utf8"));
const store = new FsStore(process.argv[3]);
const passes = Number(process.argv[4] ?? 3);
for (let rep = 0; rep < passes; rep++) {
  const cpu0 = process.cpuUsage();
  const t = performance.now();
  const bytes = await readAll(store, wl);
  const cpu = process.cpuUsage(cpu0);
  const s = (performance.now() - t) / 1000;
  console.log(
    `${(bytes / 1e6 / s).toFixed(0)} MB/s, cpu user ${(cpu.user / 1e6).toFixed(2)} s sys ${(cpu.system / 1e6).toFixed(2)} s`,
  );
}
