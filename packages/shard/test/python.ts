import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** Repository root, from packages/shard/dist/test/<file>.js. */
export const REPO = fileURLToPath(new URL("../../../../", import.meta.url));
export const VENV_PYTHON = join(REPO, ".venv", "bin", "python");
export const ZSINTEROP = join(REPO, "python", "zsinterop.py");

/**
 * Why the Python cross-checks cannot run, or undefined when they can. Only a missing python3 is a reason
 * to skip, and never under CI; a missing venv is a setup error the test reports as a failure.
 */
export function pythonSkipReason(): string | undefined {
  if (existsSync(VENV_PYTHON)) return undefined;
  const probe = spawnSync("python3", ["--version"], { encoding: "utf8" });
  if (probe.error === undefined && probe.status === 0) return undefined;
  if (process.env.CI === "true") return undefined; // fail below instead of skipping
  return "python3 is not installed";
}

export interface Job {
  op: "read" | "write";
  engine: "zarr" | "tensorstore";
  root: string;
  array: string;
  [k: string]: unknown;
}

/** Runs jobs in one Python process (start-up is the slow part) and returns one result per job. */
export function runJobs(jobs: Job[]): Record<string, unknown>[] {
  if (!existsSync(VENV_PYTHON)) {
    throw new Error(`${VENV_PYTHON} is missing: run \`flock /tmp/pip.lock bash scripts/setup-python.sh\``);
  }
  const dir = mkdtempSync(join(tmpdir(), "zs-jobs-"));
  const file = join(dir, "jobs.json");
  writeFileSync(file, JSON.stringify(jobs));
  const res = spawnSync(VENV_PYTHON, [ZSINTEROP, file], { encoding: "utf8", maxBuffer: 1 << 24 });
  if (res.status !== 0) throw new Error(`zsinterop.py failed (${res.status}): ${res.stderr}`);
  const results = JSON.parse(res.stdout) as Record<string, unknown>[];
  results.forEach((r, i) => {
    if (typeof r.error === "string")
      throw new Error(`job ${i} (${JSON.stringify(jobs[i])}) failed: ${r.error}`);
  });
  return results;
}

export function readBin(path: string): Uint8Array {
  return new Uint8Array(readFileSync(path));
}
