// The 4-writer StreamRun on an FsStore whose disk fails: a tmpfs that the test mounts and that fills up
// mid-run (mounting needs root; CI runs as root), and EIO injected into node:fs on reads and writes
// (test-support/fs-faults). A failing step is a named error (StoreFull; a StoreError naming EIO), no
// committed record is lost or changed, the writer restarted after space is freed (or the disk heals)
// resumes, and the run ends bitwise equal to an uninterrupted one, with no `.zs-tmp-*` file left.
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { readOutputManifest } from "@zarr-stream/reader";
import { StoreError, StoreFull } from "@zarr-stream/spec";
import { FsStore, type Store } from "@zarr-stream/store";
import { type FsFaults, injectFsFaults } from "@zarr-stream/test-support/fs-faults";
import { tempRoots } from "@zarr-stream/test-support/temp-dirs";
import { mountTmpfs, type Tmpfs, tmpfsSkipReason } from "@zarr-stream/test-support/tmpfs";
import { assertSameObjects, referenceRun, steppedRun } from "./four-writers.js";

const roots = tempRoots("disk-faults");
const skip = tmpfsSkipReason();
if (skip !== undefined) console.log(`# disk-full run skipped: ${skip}`);

/** `err` or an error it was caused by, when one is a `T`. */
function causeOf<T>(err: unknown, kind: abstract new (...args: never[]) => T): T | undefined {
  for (let e = err, depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    if (e instanceof kind) return e;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Paths of staging and lock files anywhere below `root`. */
const leftovers = (root: string) =>
  readdirSync(root, { recursive: true })
    .map(String)
    .filter((p) => p.includes(".zs-tmp-"));

let reference: Store;
before(async () => {
  reference = await referenceRun();
});

describe("a 4-writer run on a tmpfs that fills up mid-run", { skip }, () => {
  let fs: Tmpfs | undefined;
  after(() => fs?.umount());

  it("the disk fills up before a contributor's step and before the owner's commit: each gets StoreFull, and restarted once space is freed it resumes; the run ends bitwise equal", async (t) => {
    const parent = roots.fresh();
    mkdirSync(parent);
    fs = mountTmpfs(parent, 1 << 20);
    const tmpfs = fs;
    const root = join(tmpfs.dir, "run");
    // Another process fills the disk just before writer 2's step of round 2 (one page left) and the
    // owner's step of round 3 (8 pages: room for its shards, receipt, token and ledger, not for its
    // commit's shape rewrites); the failed step's check frees it again.
    const fillAt = new Map([
      ["2/2", 1],
      ["0/3", 8],
    ]);
    let filler: string | undefined;
    const failures: string[] = [];
    const committedAt: number[] = [];
    const started = Date.now();
    const restarts = await steppedRun({
      store: () => new FsStore(root),
      beforeStep: (id, round) => {
        const pages = fillAt.get(`${id}/${round}`);
        if (pages !== undefined) filler = tmpfs.fill(pages);
      },
      failed: async (id, round, err) => {
        const full = causeOf(err, StoreFull);
        assert.ok(full !== undefined, `writer ${id}, round ${round}: StoreFull, got ${err}`);
        assert.equal(full.code, "ENOSPC");
        assert.ok(full.path.startsWith(`${root}/`), full.path);
        if (id === 0) assert.match(full.key, /zarr\.json$/, "the owner's commit found the disk full");
        assert.deepEqual(leftovers(root), [], "the failed write left no staging or lock file");
        committedAt.push((await readOutputManifest(new FsStore(root))).n_records);
        failures.push(`writer ${id} round ${round}: ${full.name} on ${full.key}`);
        assert.ok(filler !== undefined, "the disk was full");
        rmSync(filler);
        filler = undefined;
      },
    });
    const ms = Date.now() - started;
    assert.deepEqual(restarts, [
      [2, 2],
      [0, 3],
    ]);
    assert.deepEqual(committedAt, [2, 4], "records committed when the disk filled up");
    const { compared, toggled } = await assertSameObjects(new FsStore(root), reference);
    assert.deepEqual(leftovers(root), []);
    t.diagnostic(
      `${failures.join("; ")}; ${compared} objects equal (${toggled} zarr.json by a trailing newline); ${ms} ms`,
    );
  });
});

describe("a 4-writer run with EIO injected into node:fs on reads and writes", () => {
  let faults: FsFaults;
  let native: string | undefined;
  before(async () => {
    // FsStore's native I/O does not go through node:fs: this run uses node:fs only.
    native = process.env.ZSTREAM_NATIVE_FS;
    process.env.ZSTREAM_NATIVE_FS = "0";
    faults = await injectFsFaults();
  });
  after(async () => {
    await faults.restore();
    if (native === undefined) delete process.env.ZSTREAM_NATIVE_FS;
    else process.env.ZSTREAM_NATIVE_FS = native;
  });

  it("each EIO is a named StoreError, committed records stay, the restarted writer resumes, and the run ends bitwise equal", async (t) => {
    const root = roots.fresh();
    const at = (key: string) => join(root, key);
    const stagedIn = (dir: string) => (p: string) => p.startsWith(`${at(dir)}/.zs-tmp-`);
    const failures: string[] = [];
    const restarts = await steppedRun({
      store: () => new FsStore(root),
      quiet: (read) => faults.paused(read),
      beforeStep: (id, round) => {
        // The owner's read of writer 1's token in round 2.
        if (id === 0 && round === 2)
          faults.script({ op: "read", code: "EIO", path: (p) => p === at("_tokens/2/1.json") });
        // The writes of writer 3's shard of time shard 2 in round 3 (its staging files): the first, in the
        // background once the time shard is full, fails unseen (its flush writes the shard again), and
        // the flush's write fails the step.
        if (id === 3 && round === 3)
          faults.script({ op: "write", code: "EIO", path: stagedIn("temperature/c/2/3"), times: 2 });
        // The fsync of a staged file in the store's root (the root zarr.json or the manifest) while the
        // owner commits round 4.
        if (id === 0 && round === 4) faults.script({ op: "sync", code: "EIO", path: stagedIn(".") });
      },
      failed: async (id, round, err) => {
        assert.ok(err instanceof StoreError, `writer ${id}, round ${round}: a StoreError, got ${err}`);
        assert.match(err.message, /EIO/);
        assert.deepEqual(
          await faults.paused(async () => leftovers(root)),
          [],
          "no staging or lock file left",
        );
        failures.push(`writer ${id} round ${round}: ${err.name} (${err.message.slice(0, 70)})`);
      },
    });
    assert.deepEqual(
      faults.fired.map((f) => `${f.op} ${f.code}`),
      ["read EIO", "write EIO", "write EIO", "sync EIO"],
    );
    assert.deepEqual(restarts, [
      [0, 2],
      [3, 3],
      [0, 4],
    ]);
    const { compared, toggled } = await faults.paused(() => assertSameObjects(new FsStore(root), reference));
    t.diagnostic(
      `${failures.join("; ")}; ${compared} objects equal (${toggled} zarr.json by a trailing newline)`,
    );
  });
});
