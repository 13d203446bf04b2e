import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inCi, REPO } from "./repo.js";

/** The repository's Python environments, built by scripts/setup-python.sh. */
export type Venv = ".venv" | ".venv-firecube";

export interface PythonProbeOptions {
  /** Which environment the test is written for (default ".venv"). */
  venv?: Venv;
  /** Top-level modules the test's Python code imports (standard-library ones included). */
  modules?: readonly string[];
  /** For the probe's own tests: the repository root and the environment CI is read from. */
  root?: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * Where a test's Python stands. `skip` goes straight into node:test's `skip` option; `require()` is
 * called inside the test and either names the interpreter or fails the test with the reason.
 */
export interface PythonProbe {
  /** The interpreter that imports every module, if one does. */
  readonly python: string | undefined;
  /** Why the test skips: set only outside CI, and only when no interpreter has the modules. */
  readonly skip: string | undefined;
  /** Why no interpreter fits, undefined when one does. */
  readonly missing: string | undefined;
  require(): string;
}

/** Prints the names among argv that Python cannot find, without importing anything. */
const FIND_SPECS =
  "import importlib.util, sys; print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))";

/** The modules of `modules` that `python` lacks, or undefined when `python` does not run at all. */
function lacking(python: string, modules: readonly string[]): string[] | undefined {
  const res = spawnSync(python, ["-c", FIND_SPECS, ...modules], { encoding: "utf8" });
  if (res.error !== undefined || res.status !== 0) return undefined;
  return res.stdout.split(/\s+/).filter((m) => m !== "");
}

const cache = new Map<string, { python: string | undefined; missing: string | undefined }>();

/** The first of the venv's python and python3 on PATH that imports every module, else why neither does. */
function search(
  venvPython: string,
  setup: string,
  modules: readonly string[],
): { python: string | undefined; missing: string | undefined } {
  const key = `${venvPython}\0${modules.join(",")}`;
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const reasons: string[] = [];
  let found: string | undefined;
  for (const candidate of [venvPython, "python3"]) {
    if (candidate === venvPython && !existsSync(candidate)) {
      reasons.push(`${venvPython} is missing`);
      continue;
    }
    const gaps = lacking(candidate, modules);
    if (gaps === undefined) reasons.push(`${candidate} does not run`);
    else if (gaps.length > 0) reasons.push(`${candidate} lacks ${gaps.join(", ")}`);
    else {
      found = candidate;
      break;
    }
  }
  const result = { python: found, missing: found ? undefined : `${reasons.join("; ")} (run ${setup})` };
  cache.set(key, result);
  return result;
}

/**
 * Finds the Python a test needs: the repository's venv, else python3 on PATH, whichever first imports
 * every module in `modules`. The rule (one for every package): when none does, CI (CI=true) fails the
 * test; a developer's machine skips it with the reason.
 */
export function findPython(options: PythonProbeOptions = {}): PythonProbe {
  const venv = options.venv ?? ".venv";
  const root = options.root ?? REPO;
  const { python, missing } = search(
    join(root, venv, "bin", "python"),
    "`bash scripts/setup-python.sh`",
    options.modules ?? [],
  );
  return {
    python,
    missing,
    skip: missing !== undefined && !inCi(options.env) ? missing : undefined,
    require() {
      if (python === undefined) throw new Error(`no Python for this test: ${missing}`);
      return python;
    },
  };
}

/** Runs `python -c script` with `input` on stdin and returns its stdout; throws on a non-zero exit. */
export function runPython(python: string, script: string, input = "", args: readonly string[] = []): string {
  const res = spawnSync(python, ["-c", script, ...args], { input, encoding: "utf8", maxBuffer: 64 << 20 });
  if (res.status !== 0) throw new Error(`python failed (${res.status}): ${res.stderr}`);
  return res.stdout;
}

/** One job for python/zsinterop.py: write or read an array with zarr-python or TensorStore. */
export interface InteropJob {
  op: "read" | "write";
  engine: "zarr" | "tensorstore";
  root: string;
  array: string;
  [k: string]: unknown;
}

/** What python/zsinterop.py imports. */
export const INTEROP_MODULES = ["numpy", "zarr", "tensorstore"] as const;
const ZSINTEROP = join(REPO, "python", "zsinterop.py");

/** The probe for python/zsinterop.py and the benchmark peers: zarr-python and TensorStore. */
export function interopPython(): PythonProbe {
  return findPython({ modules: INTEROP_MODULES });
}

/** Runs jobs through python/zsinterop.py in one process (start-up is the slow part); one result per job. */
export function runInteropJobs(
  jobs: InteropJob[],
  python = interopPython().require(),
): Record<string, unknown>[] {
  const dir = mkdtempSync(join(tmpdir(), "zs-jobs-"));
  try {
    const file = join(dir, "jobs.json");
    writeFileSync(file, JSON.stringify(jobs));
    const res = spawnSync(python, [ZSINTEROP, file], { encoding: "utf8", maxBuffer: 1 << 24 });
    if (res.status !== 0) throw new Error(`zsinterop.py failed (${res.status}): ${res.stderr}`);
    const results = JSON.parse(res.stdout) as Record<string, unknown>[];
    results.forEach((r, i) => {
      if (typeof r.error === "string")
        throw new Error(`job ${i} (${JSON.stringify(jobs[i])}) failed: ${r.error}`);
    });
    return results;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A file's bytes as a plain Uint8Array (what the decoders take). */
export function readBin(path: string): Uint8Array {
  return new Uint8Array(readFileSync(path));
}
