import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { FsStore } from "@zarr-stream/store";
import { ControlPlane } from "../src/index.js";

const WORKER = fileURLToPath(new URL("./fixtures/claim-worker.js", import.meta.url));
const K = 6;

interface ChildResult {
  name: string;
  won: boolean;
  owner: string;
  outcome?: string;
}

function child(root: string, name: string, mode = "claim"): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [WORKER, root, name, mode], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d) => {
      out += d;
    });
    p.stderr.on("data", (d) => {
      err += d;
    });
    p.on("exit", (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`${name} exited ${code}: ${err}`)),
    );
  });
}

test("K concurrent processes on an FsStore: exactly one claim winner and unique event ids", async () => {
  const root = await mkdtemp(join(tmpdir(), "cp-k-"));
  try {
    const children = Array.from({ length: K }, (_, i) => child(root, `w${i}`));
    await new Promise((r) => setTimeout(r, 300)); // let every child reach the barrier
    await writeFile(join(root, "go"), "");
    const results = await Promise.all(children);
    const winners = results.filter((r) => r.won);
    assert.equal(winners.length, 1, JSON.stringify(results));
    for (const r of results.filter((x) => !x.won)) assert.equal(r.owner, winners[0]!.name);

    const cp = await ControlPlane.open(new FsStore(root), { product: "demo" });
    const runs = await cp.listRuns();
    assert.equal(runs.length, K);
    const ids = runs.flatMap((r) => r.events.map((e) => e.event_id));
    assert.equal(ids.length, K * 32);
    assert.equal(new Set(ids).size, ids.length);
    for (const r of runs) {
      assert.equal(r.state, "complete");
      assert.deepEqual(r.segments, [0, 1, 2]);
    }
    const claims = await cp.listClaims();
    assert.deepEqual(
      claims.map((c) => c.claim.owner_id),
      [winners[0]!.name],
    );
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test("K concurrent processes ensuring one resolved index: one created, the rest matched_existing", async () => {
  const root = await mkdtemp(join(tmpdir(), "cp-k-index-"));
  try {
    const children = Array.from({ length: K }, (_, i) => child(root, `w${i}`, "index"));
    await new Promise((r) => setTimeout(r, 300));
    await writeFile(join(root, "go"), "");
    const outcomes = (await Promise.all(children)).map((r) => r.outcome).sort();
    assert.deepEqual(outcomes, ["created", ...Array(K - 1).fill("matched_existing")]);
    const cp = await ControlPlane.open(new FsStore(root), { product: "demo" });
    assert.deepEqual(await cp.verifyResolvedIndex(), {
      record: "ok",
      identityHash: "ac6579db66b817cf4c5e35fe54745d57dcf27a70070d4eca8c7da4d078360a1c",
      attrs: "match",
      attrsHash: "ac6579db66b817cf4c5e35fe54745d57dcf27a70070d4eca8c7da4d078360a1c",
    });
    assert.deepEqual(await cp.listClaims(), []);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
