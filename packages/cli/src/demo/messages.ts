import type { CommitToken, Region, Role, StreamSchema } from "@zarr-stream/spec";
import type { Grid } from "./field.js";

/** workerData of one demo writer thread. */
export interface WriterJob {
  storeDir: string;
  role: Role;
  region: Region;
  /** The owner creates the store with it; contributors rebuild it from the manifest. */
  schema?: StreamSchema;
  grid: Grid;
  records: number;
  commitEvery: number;
  writer: number;
  /** The owner creates the store with its manifest paged (WriterOptions.manifestPages). */
  manifestPages?: boolean;
}

export type ToMain =
  | { type: "ready"; writer: number }
  | { type: "record"; writer: number }
  | { type: "token"; writer: number; batch: number; token: CommitToken }
  | { type: "committed"; batch: number; commit_seq: number; n_committed: number }
  | { type: "done"; writer: number }
  | { type: "error"; writer: number; name: string; message: string; stack?: string };

export type ToWriter = { type: "tokens"; batch: number; tokens: CommitToken[] };

/** Record ranges [start, stop) committed together. */
export function batches(records: number, every: number): [number, number][] {
  const out: [number, number][] = [];
  for (let s = 0; s < records; s += every) out.push([s, Math.min(records, s + every)]);
  return out;
}

export const RNG_BLOB = "rng_state";
export const rngSeed = (writer: number) => 1000 + writer;
