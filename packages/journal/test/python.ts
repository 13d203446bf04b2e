import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const repoPython = fileURLToPath(new URL("../../../../.venv/bin/python", import.meta.url));

/**
 * The repo venv's python, else python3 on PATH. Undefined only when neither runs and we are not in CI;
 * under CI=true a missing python is a failure, never a skip.
 */
export function findPython(): string | undefined {
  for (const candidate of [repoPython, "python3"]) {
    if (candidate === repoPython && !existsSync(candidate)) continue;
    if (spawnSync(candidate, ["-c", "import zipfile"], { stdio: "ignore" }).status === 0) return candidate;
  }
  if (process.env.CI === "true") throw new Error("python3 is required under CI=true");
  return undefined;
}
