// The read-all pass the bench times and profile-read.mjs profiles: every variable, a time shard at a
// time, into one caller-owned buffer per dtype (readArrayRegion's `out`), as a user's read loop would
// that consumes each box before reading the next. The peers' loops (bench_peers.py) hold one result at a
// time as well: each numpy result is freed as soon as its size is taken. A fresh buffer per variable
// would instead leave the last one to V8's garbage collector, whose external-memory limit then forces a
// full mark-compact into the pass (12 ms of a 40 ms pass on the matrix's base cell, measured with
// --trace-gc; see the bench README). The buffers are kept from one pass to the next, as a reading loop
// keeps its buffer and as the peers' allocator hands their freed results back: a fresh 16 MB buffer per
// pass costs about 7 ms of page faults that theirs do not pay after the first box.
import { readArrayLayout, readArrayRegion } from "@zarr-stream/reader";
import { allocTypedUnfilled } from "@zarr-stream/shard";
import { totalBytes } from "./workload.mjs";

/** Result buffers by dtype, kept across passes (grown when a workload needs more). */
const outs = new Map();

/** Reads every record of every variable of workload `wl` from `store`; resolves with the bytes read. */
export async function readAll(store, wl) {
  let bytes = 0;
  for (const v of wl.vars) {
    const layout = await readArrayLayout(store, v.name);
    let out = outs.get(layout.dtype);
    if (out === undefined || out.length < wl.shard[0] * wl.lat * wl.lon) {
      out = allocTypedUnfilled(layout.dtype, wl.shard[0] * wl.lat * wl.lon);
      outs.set(layout.dtype, out);
    }
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

/**
 * `passes` read-all passes over `store`, each checked to return the workload's bytes: per pass its
 * seconds and the CPU seconds of every thread (as bench_peers.py's timed_passes gives the peers').
 */
export async function timedPasses(store, wl, passes) {
  const out = [];
  for (let i = 0; i < passes; i++) {
    const c0 = process.cpuUsage();
    const t = performance.now();
    const bytes = await readAll(store, wl);
    const s = (performance.now() - t) / 1000;
    const c = process.cpuUsage(c0);
    if (bytes !== totalBytes(wl))
      throw new Error(`read all returned ${bytes} bytes, expected ${totalBytes(wl)}`);
    out.push({ s, cpu: (c.user + c.system) / 1e6 });
  }
  return out;
}
