// Read-all passes over a store written by profile-write.mjs, for profiling (see there); prints MB/s and the
// process's CPU time (user, sys) per pass. Each variable is read a time shard at a time into one
// caller-owned buffer (readArrayRegion's `out`), as a read-all loop would.
import { readFileSync } from "node:fs";
import { readArrayLayout, readArrayRegion } from "@zarr-stream/reader";
import { allocTypedUnfilled } from "@zarr-stream/shard";
import { FsStore } from "@zarr-stream/store";

const wl = JSON.parse(readFileSync(process.argv[2], "utf8"));
const store = new FsStore(process.argv[3]);
const passes = Number(process.argv[4] ?? 3);
for (let rep = 0; rep < passes; rep++) {
  const cpu0 = process.cpuUsage();
  const t = performance.now();
  let bytes = 0;
  for (const v of wl.vars) {
    const layout = await readArrayLayout(store, v.name);
    const out = allocTypedUnfilled(layout.dtype, wl.shard[0] * wl.lat * wl.lon);
    for (let r0 = 0; r0 < wl.records; r0 += wl.shard[0]) {
      const r1 = Math.min(wl.records, r0 + wl.shard[0]);
      const box = await readArrayRegion(
        store,
        v.name,
        layout,
        [
          [r0, r1],
          [0, wl.lat],
          [0, wl.lon],
        ],
        { out: out.subarray(0, (r1 - r0) * wl.lat * wl.lon) },
      );
      bytes += box.byteLength;
    }
  }
  const cpu = process.cpuUsage(cpu0);
  const s = (performance.now() - t) / 1000;
  console.log(
    `${(bytes / 1e6 / s).toFixed(0)} MB/s, cpu user ${(cpu.user / 1e6).toFixed(2)} s sys ${(cpu.system / 1e6).toFixed(2)} s`,
  );
}
