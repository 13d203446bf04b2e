import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { fileURLToPath } from "node:url";
import { FsStore } from "@zarr-stream/store";
import { findPython } from "@zarr-stream/test-support/python";
import { ControlPlane } from "../src/index.js";

const repo = fileURLToPath(new URL("../../../../", import.meta.url));
const firecube = findPython({ venv: ".venv-firecube", modules: ["firecube"] });
const script = join(repo, "packages", "controlplane", "interop", "slot_read.py");
const { skip } = firecube;

it(
  "a slot index we record is mirrored into root attributes that firecube 0.1.7's API reads and accepts",
  { skip },
  async () => {
    const dir = await mkdtemp(join(tmpdir(), "zs-slot-"));
    try {
      const root = join(dir, "SLOT.zarr");
      const cp = await ControlPlane.open(new FsStore(root), {
        product: "SLOT",
        claimHeartbeatIntervalS: 0,
        runHeartbeatIntervalS: 0,
      });
      const runId = await cp.startRun({ runId: "zs-slot" });
      const model = {
        epoch: "2026-01-01T00:00:00Z",
        groups: { g1: { cadence_s: 300, mode: "exact" } },
        name: "opera_v1",
        schema_version: "v1",
        time_unit: null,
      };
      const ours = await cp.ensureSlotIndexModel(model, { runId });
      await cp.completeRun(runId);
      await cp.close();
      const res = spawnSync(firecube.require(), [script, root, "SLOT"], {
        encoding: "utf8",
        timeout: 120_000,
      });
      assert.equal(res.status, 0, `slot_read.py failed:\n${res.stdout}\n${res.stderr}`);
      const seen = JSON.parse(res.stdout.trim().split("\n").at(-1)!);
      const golden = "bc441fbb3eb848c54db2c4673e75271d3b98dbb2b7b49081b521b7ef3923a894";
      assert.equal(ours.identityHash, golden);
      assert.deepEqual(seen, {
        attrs_hash: golden,
        record_hash: golden,
        model_hash: golden,
        ensured_hash: golden,
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
);
