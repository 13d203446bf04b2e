import {
  readArrayLayout,
  readArrayRegion,
  readBlob,
  readOutputManifest,
  readRecord,
  readStatic,
} from "@zarr-stream/reader";
import type { Store } from "@zarr-stream/store";
import { type Grid, landMask, Rng, recordTime, temperature } from "./field.js";
import { batches, RNG_BLOB, rngSeed } from "./messages.js";
import type { Split } from "./plan.js";

export interface ReadBackReport {
  records: number;
  statics: number;
  blobs: number;
  /** Human descriptions of every difference found; empty when the store holds exactly what was written. */
  mismatches: string[];
}

function firstDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return -2;
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return i;
  return -1;
}

/**
 * Reads every committed record, the static and every blob back through the read-back API and compares
 * them bitwise with a regeneration of what each writer wrote (each writer's RNG stream replayed).
 */
export async function readBack(
  store: Store,
  grid: Grid,
  split: Split,
  records: number,
  commitEvery: number,
): Promise<ReadBackReport> {
  const m = await readOutputManifest(store);
  const mismatches: string[] = [];
  if (m.n_records !== records)
    mismatches.push(`manifest commits ${m.n_records} records, the demo wrote ${records}`);
  const timeLayout = await readArrayLayout(store, "time");
  const times = await readArrayRegion(store, "time", timeLayout, [
    [0, Math.min(records, timeLayout.shape[0]!)],
  ]);
  for (let r = 0; r < times.length; r++) {
    if (times[r] !== recordTime(r)) mismatches.push(`time[${r}] is ${times[r]}, expected ${recordTime(r)}`);
  }
  const blobEnds = new Set(batches(records, commitEvery).map(([, stop]) => stop - 1));
  let blobs = 0;
  for (const [w, region] of split.regions.entries()) {
    const rng = new Rng(rngSeed(w));
    const mask = await readStatic(store, "land_mask", region, { manifest: m });
    if (firstDifference(mask.data as Uint8Array, landMask(grid, region)) !== -1) {
      mismatches.push(`land_mask over writer ${w}'s region differs`);
    }
    for (let r = 0; r < Math.min(records, m.n_records); r++) {
      const want = temperature(recordTime(r), grid, region, rng);
      const got = await readRecord(store, "temperature", r, region, { manifest: m });
      const at = firstDifference(got.data as Float32Array, want);
      if (at !== -1)
        mismatches.push(`temperature record ${r}, writer ${w}'s region: first difference at element ${at}`);
      if (blobEnds.has(r)) {
        const bytes = await readBlob(store, { record: r }, w, RNG_BLOB, { manifest: m });
        if (firstDifference(bytes, rng.stateBytes()) !== -1)
          mismatches.push(`blob record/${r}/${w}/${RNG_BLOB} differs`);
        blobs++;
      }
    }
  }
  return { records: m.n_records, statics: 1, blobs, mismatches };
}
