import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { ControlPlane } from "@zarr-stream/controlplane";
import { readOutputManifest, readRecord } from "@zarr-stream/reader";
import { FsStore } from "@zarr-stream/store";
import { ZarrStreamWriter } from "@zarr-stream/writer";
import { N_RECORDS, options, recordOf, STALE_S } from "./recover-workload.js";

const CHILD = fileURLToPath(new URL("./recover-child.js", import.meta.url));
const BIN = fileURLToPath(new URL("../src/bin.js", import.meta.url));

/** Resolves with the child's stdout so far once a line matches, or rejects when it exits first. */
function waitFor(child: ChildProcess, pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    child.stderr!.on("data", (d: Buffer) => {
      err += d.toString();
    });
    const onData = (d: Buffer) => {
      out += d.toString();
      if (pattern.test(out)) {
        child.stdout!.off("data", onData);
        resolve(out);
      }
    };
    child.stdout!.on("data", onData);
    child.once("exit", (code) => reject(new Error(`child exited (${code}) before ${pattern}: ${out}${err}`)));
  });
}

function runToEnd(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, args, { encoding: "utf8", timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

it("two owner processes: one wins; kill -9 it, zstream recover, resume: the projection shows every commit once", async () => {
  const dir = join(mkdtempSync(join(tmpdir(), "zs-recover-")), "store");
  try {
    const winner = spawn(process.execPath, [CHILD, dir, "create", "owner-a"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    await waitFor(winner, /opened/);
    // A second process opening the store as its owner fails fast and writes nothing.
    const loser = runToEnd([CHILD, dir, "resume", "owner-b"]);
    assert.equal(loser.status, 3, loser.stderr);
    assert.match(loser.stderr, /ClaimConflict|still live/);
    const loserCreate = runToEnd([CHILD, dir, "create", "owner-c"]);
    assert.equal(loserCreate.status, 3, loserCreate.stderr);

    await waitFor(winner, /committed 12\n/);
    winner.kill("SIGKILL");
    await new Promise((r) => winner.once("exit", r));
    const store = new FsStore(dir);
    const committedAtKill = (await readOutputManifest(store)).n_records;
    assert.ok(committedAtKill >= 12 && committedAtKill < N_RECORDS, `committed ${committedAtKill}`);

    // Until the dead run and its claims are stale, recovery refuses to touch them and resume is refused.
    await assert.rejects(
      ZarrStreamWriter.resume(store, { kind: "owner", nWriters: 1 }, {}, undefined, options("owner-d")),
    );
    await sleep(STALE_S * 1000 + 500);
    const rec = runToEnd([BIN, "recover", dir]);
    assert.equal(rec.status, 0, `${rec.stdout}\n${rec.stderr}`);
    assert.match(rec.stdout, /abandon/i);

    const w = await ZarrStreamWriter.resume(
      store,
      { kind: "owner", nWriters: 1 },
      {},
      undefined,
      options("owner-d"),
    );
    for (let r = committedAtKill; r < N_RECORDS; r++) {
      await w.writeRecord(r, recordOf(r));
      if ((r + 1) % 4 === 0) await w.commit([await w.flush()]);
    }
    await w.close();

    const m = await readOutputManifest(store);
    assert.equal(m.n_records, N_RECORDS);
    for (const r of [0, committedAtKill - 1, committedAtKill, N_RECORDS - 1]) {
      assert.deepEqual(
        Array.from((await readRecord(store, "u", r)).data as Float64Array),
        Array.from(recordOf(r).u),
      );
    }
    const plane = await ControlPlane.open(store, { product: "DEMO" });
    const runs = await plane.listRuns();
    assert.deepEqual(runs.map((r) => r.state).sort(), ["abandoned", "complete"]);
    const covered = [...(await plane.project()).state.values()]
      .filter((s) => s.type === "span" && s.status === "active")
      .flatMap((s) => (s.span as { time_index_ranges: [number, number][] }).time_index_ranges)
      .flatMap(([a, b]) => Array.from({ length: b - a + 1 }, (_, i) => a + i))
      .sort((a, b) => a - b);
    assert.deepEqual(
      covered,
      Array.from({ length: N_RECORDS }, (_, i) => i),
    );
    assert.deepEqual(await plane.listClaims(), []);
    await plane.close();
  } finally {
    rmSync(join(dir, ".."), { recursive: true, force: true });
  }
});
