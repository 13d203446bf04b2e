import { SchemaError } from "@zarr-stream/spec";

/** A process's place in a run: writer `id` of `count`, and where each came from. */
export interface RunRank {
  id: number;
  count: number;
  /** The launcher whose variables gave the id ("explicit" when the caller gave it). */
  source: "explicit" | "openmpi" | "mpich" | "slurm-array" | "slurm" | "kubernetes";
  /**
   * The launch this process belongs to, shared by every process of it and by no other launch: the
   * caller's, `ZSTREAM_JOB`, or the launcher's job id. Undefined when none is known. Two launches of one
   * job are told apart by it (fencing.md, "A job started twice").
   */
  job?: string;
}

/**
 * The variables each launcher sets for the process it starts, in the order they are tried. A Slurm array
 * job's tasks are separate jobs that each see SLURM_PROCID 0, so the task id is tried first (an array
 * of 0..count-1). A Kubernetes Indexed Job gives only the index: its count (`spec.completions`) must be
 * passed explicitly.
 */
const LAUNCHERS = [
  { source: "openmpi", rank: "OMPI_COMM_WORLD_RANK", size: "OMPI_COMM_WORLD_SIZE" },
  { source: "mpich", rank: "PMI_RANK", size: "PMI_SIZE" },
  { source: "slurm-array", rank: "SLURM_ARRAY_TASK_ID", size: "SLURM_ARRAY_TASK_COUNT" },
  { source: "slurm", rank: "SLURM_PROCID", size: "SLURM_NTASKS" },
  { source: "kubernetes", rank: "JOB_COMPLETION_INDEX", size: undefined },
] as const;

/** Job ids the launchers set, in the order they are tried (each a list of variables joined by "."). */
const JOB_IDS: { source: string; vars: string[] }[] = [
  { source: "openmpi", vars: ["PMIX_NAMESPACE"] },
  { source: "openmpi", vars: ["OMPI_MCA_ess_base_jobid"] },
  { source: "slurm-array", vars: ["SLURM_ARRAY_JOB_ID"] },
  { source: "slurm", vars: ["SLURM_JOB_ID", "SLURM_STEP_ID"] },
];

/** This launch's job id: the caller's, then ZSTREAM_JOB, then the launcher's variables. */
export function launchJob(
  explicit: string | undefined,
  env: Record<string, string | undefined>,
): string | undefined {
  if (explicit !== undefined) return explicit;
  if (env.ZSTREAM_JOB !== undefined && env.ZSTREAM_JOB !== "") return env.ZSTREAM_JOB;
  for (const { source, vars } of JOB_IDS) {
    if (vars.every((v) => env[v] !== undefined && env[v] !== ""))
      return `${source}:${vars.map((v) => env[v]).join(".")}`;
  }
  return undefined;
}

const LAUNCHER_HELP =
  "start the process under mpirun/srun (OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/SIZE, SLURM_PROCID/NTASKS), " +
  "as a Slurm array job of tasks 0..count-1 (SLURM_ARRAY_TASK_ID/COUNT), " +
  "as a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, with the count given), or pass id and count";

function parseCount(text: string, what: string, min: number): number {
  if (!/^(0|[1-9][0-9]{0,8})$/.test(text.trim())) {
    throw new SchemaError(`${what} must be an integer >= ${min}, got "${text}"`, `/${what}`);
  }
  const n = Number(text.trim());
  if (n < min) throw new SchemaError(`${what} must be an integer >= ${min}, got ${n}`, `/${what}`);
  return n;
}

function checkInteger(v: number, what: string, min: number): number {
  if (!Number.isSafeInteger(v) || v < min) {
    throw new SchemaError(`${what} must be an integer >= ${min}, got ${v}`, `/${what}`);
  }
  return v;
}

/**
 * Writer id and count: each from the caller when given, otherwise from the first launcher whose rank
 * variable is set. Every value is validated, and the id must be below the count.
 */
export function runRank(
  explicit: { id?: number; count?: number; job?: string } = {},
  env: Record<string, string | undefined> = process.env,
): RunRank {
  let id = explicit.id === undefined ? undefined : checkInteger(explicit.id, "id", 0);
  let count = explicit.count === undefined ? undefined : checkInteger(explicit.count, "count", 1);
  let source: RunRank["source"] = "explicit";
  if (id === undefined || count === undefined) {
    const found = LAUNCHERS.find((l) => env[l.rank] !== undefined);
    if (found !== undefined) {
      if (id === undefined) {
        id = parseCount(env[found.rank]!, found.rank, 0);
        source = found.source;
      }
      if (count === undefined && found.size !== undefined && env[found.size] !== undefined) {
        count = parseCount(env[found.size]!, found.size, 1);
      }
    }
  }
  if (id === undefined) throw new SchemaError(`no writer id: ${LAUNCHER_HELP}`, "/id");
  if (count === undefined) {
    throw new SchemaError(`no writer count for writer ${id}: ${LAUNCHER_HELP}`, "/count");
  }
  if (id >= count) {
    throw new SchemaError(
      `writer id ${id} is not below the writer count ${count}: ids run 0..${count - 1}; check the launcher's rank/size or the count given`,
      "/id",
    );
  }
  const job = launchJob(explicit.job, env);
  return job === undefined ? { id, count, source } : { id, count, source, job };
}
