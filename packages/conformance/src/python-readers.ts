import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ZarrStreamError } from "@zarr-stream/spec";

/** The Python readers of python/dump_store.py, each independent of zarr-stream. */
export const PYTHON_READERS = ["zarr-python", "tensorstore", "earthsciio"] as const;
export type PythonReader = (typeof PYTHON_READERS)[number];

export const DUMP_SCRIPT = new URL("../../python/dump_store.py", import.meta.url).pathname;

export interface ReaderJob {
  store: string;
  case: string;
  out: string;
}

export class PythonReaderError extends ZarrStreamError {
  override name = "PythonReaderError";
}

/**
 * Dumps every job's store with one Python reader, in ONE Python process for all jobs (start-up and
 * imports cost more than the reads). Resolves with the script's per-job lines; rejects naming the
 * failed jobs when the script exits non-zero.
 */
export async function runPythonReader(
  python: string,
  reader: PythonReader,
  jobs: ReaderJob[],
  workDir: string,
): Promise<string[]> {
  const jobsFile = join(workDir, `jobs-${reader}.json`);
  await writeFile(jobsFile, JSON.stringify(jobs));
  const { code, lines, stderr } = await runScript(python, [DUMP_SCRIPT, reader, jobsFile]);
  if (code !== 0) {
    const failed = lines.filter((l) => !l.startsWith("ok "));
    throw new PythonReaderError(
      `${reader} reader exited ${code}: ${failed.join("; ")} ${stderr.trim().split("\n").slice(-3).join(" ")}`,
    );
  }
  return lines;
}

export const CHECK_SCRIPT = new URL("../../python/crosscheck_write_v2.py", import.meta.url).pathname;

/** python/crosscheck_write_v2.py on `dumps`: its exit code and its lines (one per dump, like `check`). */
export async function runPythonCheck(
  python: string,
  corpusPath: string,
  dumps: string[],
): Promise<{ code: number | null; lines: string[]; stderr: string }> {
  return runScript(python, [CHECK_SCRIPT, "--corpus", corpusPath, ...dumps]);
}

/** Runs a Python script to its end: exit code, non-empty stdout lines and stderr. */
async function runScript(
  python: string,
  args: string[],
): Promise<{ code: number | null; lines: string[]; stderr: string }> {
  const child = spawn(python, args, { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", resolve);
  });
  return { code, lines: stdout.split("\n").filter((l) => l !== ""), stderr };
}
