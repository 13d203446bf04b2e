import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { it } from "node:test";
import { fileURLToPath } from "node:url";
import { findPython } from "@zarr-stream/test-support/python";

const repo = fileURLToPath(new URL("../../../../", import.meta.url));
const firecube = findPython({ venv: ".venv-firecube", modules: ["firecube"] });
const { skip } = firecube;

it(
  "interop with the reference firecube 0.1.7: each side reads, recovers and snapshots the other's .firecube/",
  { skip },
  () => {
    const res = spawnSync("bash", [join(repo, "packages", "controlplane", "interop", "run-interop.sh")], {
      env: { ...process.env, FIRECUBE_PYTHON: firecube.require() },
      encoding: "utf8",
      timeout: 240_000,
    });
    assert.equal(res.status, 0, `run-interop.sh failed:\n${res.stdout}\n${res.stderr}`);
    assert.match(res.stdout, /interop OK/);
  },
);
