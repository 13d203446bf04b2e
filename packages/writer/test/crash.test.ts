import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { readOutputManifest, readRecord } from "@zarr-stream/reader";
import { fillGenerated } from "@zarr-stream/spec";
import { FsStore, MemoryStore } from "@zarr-stream/store";
import { COMMIT_EVERY, N_RECORDS, openWriters, runFrom } from "./crash-workload.js";
import { committedDump } from "./helpers.js";

const CHILD = fileURLToPath(new URL("./crash-child.js", import.meta.url));
const RUNS = Number(process.env.CRASH_RUNS ?? 200);

interface ChildRun {
  lastCommitted: number;
  created: boolean;
  /** Time from "created" to exit. */
  ms: number;
}

/** Runs the child and SIGKILLs it `killAfterMs` after it reports the store created (never, if undefined). */
function runChild(dir: string, killAfterMs?: number): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, dir], { stdio: ["ignore", "pipe", "pipe"] });
    let started = Date.now();
    let created = false;
    let lastCommitted = 0;
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      for (const line of out.split("\n")) {
        if (line === "created" && !created) {
          created = true;
          started = Date.now();
          if (killAfterMs !== undefined) setTimeout(() => child.kill("SIGKILL"), killAfterMs);
        }
        const m = /^committed (\d+)$/.exec(line);
        if (m) lastCommitted = Math.max(lastCommitted, Number(m[1]));
      }
    });
    child.stderr.on("data", (d: Buffer) => {
      err += d.toString();
    });
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      if (signal !== "SIGKILL" && code !== 0) reject(new Error(`child failed (${code}): ${err}`));
      else resolve({ lastCommitted, created, ms: Date.now() - started });
    });
  });
}

/** Every committed record equals the generator's values: the store shows exactly a committed state. */
async function checkCommitted(store: FsStore): Promise<number> {
  const m = await readOutputManifest(store);
  for (let i = 0; i < m.n_records; i++) {
    const r = await readRecord(store, "temperature", i, undefined, { manifest: m });
    const want = fillGenerated("float64", 1000, i, ["lat", "lon"], { lat: [0, 4], lon: [0, 6] });
    assert.deepEqual(Array.from(r.data as Float64Array), Array.from(want as Float64Array), `record ${i}`);
  }
  return m.n_records;
}

describe("crash safety (child processes killed with SIGKILL)", () => {
  it(`after each of ${RUNS} kills the store shows the last commit, and resume finishes it bitwise`, async () => {
    const reference = new MemoryStore();
    await runFrom(await openWriters(reference, "create"), 0);
    const want = await committedDump(reference);
    const root = mkdtempSync(join(tmpdir(), "zs-crash-"));
    try {
      const full = await runChild(join(root, "full"));
      assert.equal(full.lastCommitted, N_RECORDS);
      assert.equal(await committedDump(new FsStore(join(root, "full"))), want);
      let interrupted = 0;
      // Runs are I/O bound (every put fsyncs), so a few run side by side.
      let next = 0;
      const worker = async () => {
        while (next < RUNS) {
          const run = next++;
          const dir = join(root, `run-${run}`);
          const killAt = Math.random() * full.ms * 1.1;
          const res = await runChild(dir, killAt);
          assert.ok(res.created);
          const store = new FsStore(dir);
          const n = await checkCommitted(store);
          // the manifest is the commit point: it may be one commit ahead of what the child printed, never behind
          assert.ok(
            n === res.lastCommitted || n === res.lastCommitted + COMMIT_EVERY,
            `run ${run}: manifest ${n}, child said ${res.lastCommitted}`,
          );
          if (n < N_RECORDS) interrupted++;
          await runFrom(await openWriters(store, "resume"), n);
          assert.equal(
            await committedDump(store),
            want,
            `run ${run} killed after ${killAt.toFixed(0)} ms at ${n} records`,
          );
          rmSync(dir, { recursive: true, force: true });
        }
      };
      await Promise.all([worker(), worker(), worker(), worker()]);
      assert.ok(interrupted >= RUNS / 4, `only ${interrupted} of ${RUNS} kills interrupted the run`);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
