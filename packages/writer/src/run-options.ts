import { type Region, SchemaError, type StreamSchema } from "@zarr-stream/spec";
import type { Store } from "@zarr-stream/store";
import type { WriterOptions } from "./writer.js";

/** What a run reports while it opens, writes, waits and commits (for a progress line or a log). */
export type RunEvent =
  | { kind: "waiting-for-owner"; waitedMs: number }
  | { kind: "opened"; id: number; count: number; mode: "create" | "join" | "resume"; nextRecord: number }
  | { kind: "posted"; round: number; records: number }
  | { kind: "waiting"; round: number; missing: number[]; waitedMs: number }
  | { kind: "committed"; round: number; nCommitted: number }
  | { kind: "closed" };

export interface RunOptions {
  /** A store URL (`s3://bucket/prefix`, a path, `file://`, `memory://`) or an opened store. */
  store: string | Store;
  /** This process's writer id; default: the launcher's rank variable. */
  id?: number;
  /** How many writers the run has; default: the launcher's size variable. */
  count?: number;
  /**
   * The launch this process belongs to; default ZSTREAM_JOB, then the launcher's job id (Open MPI, Slurm).
   * A contributor joins only a run whose owner is of its launch, so of a job started twice the newer
   * launch goes on and the older one is Fenced (fencing.md, "A job started twice").
   */
  job?: string;
  /** Where the defaults are read from (default process.env). */
  env?: Record<string, string | undefined>;
  /** This writer's region (seed §3). */
  region?: Region;
  /** The schema: the owner (id 0) needs it to create the store; others, when given, check it is the store's. */
  schema?: StreamSchema;
  /** Commit every this many records (0: only on `commit()` and `close()`). Every writer must use the same. */
  commitEvery?: number;
  /** Give up a wait (the owner's for tokens, a contributor's for the store) after this long (default 10 min). */
  timeoutMs?: number;
  /** Report a wait that lasts this long, then again at this interval (default 5 s). */
  reportEveryMs?: number;
  /** Pause between looks at the store while waiting (default 100 ms). */
  pollMs?: number;
  onEvent?: (event: RunEvent) => void;
  /**
   * Keep the manifest in the paged form (WriterOptions.manifestPages, docs/manifest-pages.md): writer 0
   * creates the store so; a writer that resumes or joins keeps the store's form, and refuses a value that
   * contradicts it. Default: left to the store (unpaged when created).
   */
  manifestPages?: boolean;
  writerOptions?: WriterOptions;
}

/** RunOptions with every wait and interval given (defaults filled in) and checked. */
export type RunSettings = Required<
  Pick<RunOptions, "commitEvery" | "timeoutMs" | "reportEveryMs" | "pollMs">
> &
  RunOptions;

/** RunOptions with the defaults filled in; the options' shape is checked first (run-option-checks.ts). */
export function runSettings(options: RunOptions): RunSettings {
  const o = {
    commitEvery: 0,
    timeoutMs: 600_000,
    reportEveryMs: 5_000,
    pollMs: 100,
    ...options,
  };
  for (const name of ["commitEvery", "timeoutMs", "reportEveryMs", "pollMs"] as const) {
    const v = o[name];
    if (!Number.isSafeInteger(v) || v < 0)
      throw new SchemaError(`${name} must be an integer >= 0, got ${v}`, `/${name}`);
  }
  return o;
}
