import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { it } from "node:test";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../../../../", import.meta.url));
const python = join(repo, ".venv-firecube", "bin", "python");
// Only a machine without Python >= 3.12 may skip, and never CI (scripts/setup-python.sh builds the venv).
const skip =
  !existsSync(python) && process.env.CI !== "true" ? "no .venv-firecube (needs Python >= 3.12)" : undefined;

it(
  "interop with the reference firecube 0.1.7: each side reads, recovers and snapshots the other's .firecube/",
  { skip },
  () => {
    const res = spawnSync("bash", [join(repo, "packages", "controlplane", "interop", "run-interop.sh")], {
      env: { ...process.env, FIRECUBE_PYTHON: python },
      encoding: "utf8",
      timeout: 240_000,
    });
    assert.equal(res.status, 0, `run-interop.sh failed:\n${res.stdout}\n${res.stderr}`);
    assert.match(res.stdout, /interop OK/);
  },
);
