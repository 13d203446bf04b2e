import { fileURLToPath } from "node:url";

/** The repository root, from packages/test-support/dist/src/<file>.js. */
export const REPO = fileURLToPath(new URL("../../../../", import.meta.url));

/** True when the run is CI's: then a missing tool is a failure, never a skip. */
export function inCi(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.CI === "true";
}
