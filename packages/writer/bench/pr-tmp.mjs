import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { readArrayLayout, readArrayRegion } from "@zarr-stream/reader";
import { FsStore } from "@zarr-stream/store";

const wl = JSON.parse(readFileSync(process.argv[2], "utf8"));
const store = new FsStore(process.argv[3]);
for (const cold of [true, false, true, false]) {
  if (cold) {
    execFileSync("sync");
    writeFileSync("/proc/sys/vm/drop_caches", "3\n");
  }
  const c0 = process.cpuUsage();
  const t = performance.now();
  let bytes = 0;
  for (const v of wl.vars) {
    const layout = await readArrayLayout(store, v.name);
    for (let r0 = 0; r0 < wl.records; r0 += wl.shard[0]) {
      const box = await readArrayRegion(store, v.name, layout, [
        [r0, Math.min(wl.records, r0 + wl.shard[0])],
        [0, wl.lat],
        [0, wl.lon],
      ]);
      bytes += box.byteLength;
    }
  }
  const s = (performance.now() - t) / 1000;
  const c = process.cpuUsage(c0);
  console.log(
    cold ? "cold" : "warm",
    (bytes / 1e6 / s).toFixed(0),
    "MB/s",
    "cpu",
    ((c.user + c.system) / 1e6).toFixed(2),
    "s",
    "wall",
    s.toFixed(2),
  );
}
