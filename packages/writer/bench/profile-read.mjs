// Read-all passes over a store written by profile-write.mjs, for profiling (see there); prints MB/s.
import { readFileSync } from "node:fs";
import { readArrayLayout, readArrayRegion } from "@zarr-stream/reader";
import { FsStore } from "@zarr-stream/store";

const wl = JSON.parse(readFileSync(process.argv[2], "utf8"));
const store = new FsStore(process.argv[3]);
for (let rep = 0; rep < 3; rep++) {
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
  console.log((bytes / 1e6 / ((performance.now() - t) / 1000)).toFixed(0), "MB/s");
}
