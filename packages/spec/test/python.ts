import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const repoRoot = fileURLToPath(new URL("../../../../", import.meta.url));

/** The repo venv's python if set up, else python3 on PATH; undefined only when neither exists. */
function pythonPath(): string | undefined {
  const venv = `${repoRoot}.venv/bin/python`;
  if (existsSync(venv)) return venv;
  const probe = spawnSync("python3", ["--version"]);
  return probe.status === 0 ? "python3" : undefined;
}

export const PYTHON = pythonPath();

/** Under CI a missing python is a failure, never a skip. */
export function skipUnlessPython(): string | false {
  if (PYTHON !== undefined) return false;
  if (process.env.CI === "true") throw new Error("python3 is required under CI=true");
  return "python3 is not installed";
}

/** Runs a Python script with `input` on stdin and returns its stdout; throws on a non-zero exit. */
export function runPython(script: string, input = ""): string {
  if (PYTHON === undefined) throw new Error("python3 is not installed");
  const res = spawnSync(PYTHON, ["-c", script], { input, encoding: "utf8", maxBuffer: 64 << 20 });
  if (res.status !== 0) throw new Error(`python failed (${res.status}): ${res.stderr}`);
  return res.stdout;
}
