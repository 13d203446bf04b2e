import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { fileURLToPath } from "node:url";
import { findPython } from "@zarr-stream/test-support/python";
import { runControlPlaneCli } from "../src/index.js";

const repo = fileURLToPath(new URL("../../../../", import.meta.url));
const firecube = findPython({ venv: ".venv-firecube", modules: ["firecube"] });
const script = join(repo, "packages", "controlplane", "interop", "index_writes.py");
const { skip } = firecube;

async function verify(root: string): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await runControlPlaneCli(["index", "verify", "--store", root, "--product", "IDX", "--json"], {
    out: (t) => {
      out += t;
    },
    err: (t) => {
      err += t;
    },
  });
  return { code, out, err };
}

it(
  "an index firecube 0.1.7 wrote with floats, integral floats and a 2^60 integer verifies; a changed digit does not",
  { skip },
  async () => {
    const dir = await mkdtemp(join(tmpdir(), "zs-exact-"));
    try {
      const root = join(dir, "IDX.zarr");
      const res = spawnSync(firecube.require(), [script, root, "IDX"], {
        encoding: "utf8",
        timeout: 120_000,
      });
      assert.equal(res.status, 0, `index_writes.py failed:\n${res.stdout}\n${res.stderr}`);
      const [outcome, hash] = res.stdout.trim().split(" ");
      assert.equal(outcome, "created");

      const ok = await verify(root);
      assert.equal(ok.code, 0, ok.err);
      assert.deepEqual(JSON.parse(ok.out), {
        record: "ok",
        identityHash: hash,
        attrs: "match",
        attrsHash: hash,
      });

      // The last digit of the big integer is covered by the hash: a record that differs only there is refused.
      const recordPath = join(root, ".firecube", "index", "current.json");
      const text = await readFile(recordPath, "utf8");
      await writeFile(recordPath, text.replace("1767225600000000000", "1767225600000000001"));
      const bad = await verify(root);
      assert.equal(bad.code, 1);
      assert.match(bad.err, /identity-hash mismatch/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
);
