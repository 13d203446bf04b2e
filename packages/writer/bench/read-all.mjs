// The read-all pass the bench times and profile-read.mjs profiles: every variable, a time shard at a
// time, into one caller-owned buffer per variable (readArrayRegion's `out`), as a user's read loop would.
import { readArrayLayout, readArrayRegion } from "@zarr-stream/reader";
import { allocTypedUnfilled } from "@zarr-stream/shard";

/** Reads every record of every variable of workload `wl` from `store`; resolves with the bytes read. */
export async function readAll(store, wl) {
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
  return bytes;
}
