// The bench's one writer: every record of the workload from the pool, a flush every commit_every records.
// Shared by the local and S3 contenders and the profiling scripts, so they all time the same loop.
import { ZarrStreamWriter } from "@zarr-stream/writer";
import { streamSchema } from "./workload.mjs";

/** Record arrays of writer band [a, b): row-major, so a lat band is a contiguous subarray. */
export function recordFor(wl, pool, r, band) {
  const out = {};
  wl.vars.forEach((v, k) => {
    const f = pool[k][r % wl.pool];
    out[v.name] = band ? f.subarray(band[0] * wl.lon, band[1] * wl.lon) : f;
  });
  return out;
}

/** Creates the store's arrays as a Single writer and writes every record, then closes. */
export async function writeSingle(wl, pool, store) {
  const w = await ZarrStreamWriter.create(store, streamSchema(wl), { kind: "single" });
  for (let r = 0; r < wl.records; r++) {
    await w.writeRecord(3600 * r, recordFor(wl, pool, r));
    if ((r + 1) % wl.commit_every === 0) await w.flush();
  }
  await w.close();
}
