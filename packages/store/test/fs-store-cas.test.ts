import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdirSync, readlinkSync, utimesSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { tempRoots } from "@zarr-stream/test-support/temp-dirs";
import { FsStore } from "../src/fs-store.js";
import { bytes } from "./store-suite.js";

const CHILD = fileURLToPath(new URL("./cas-counter-child.js", import.meta.url));
const run = promisify(execFile);
const roots = tempRoots("store-cas");

describe("FsStore.putIfVersion across processes", () => {
  it("Store.putIfVersion: 4 processes x 40 read-modify-write increments lose no update", async () => {
    const root = roots.fresh();
    const outs = await Promise.all(
      Array.from({ length: 4 }, () => run(process.execPath, [CHILD, root, "40"])),
    );
    const counter = await new FsStore(root).get("counter");
    assert.equal(new TextDecoder().decode(counter), "160");
    const retries = outs.map((o) => Number(/retries (\d+)/.exec(o.stdout)?.[1]));
    assert.ok(retries.every(Number.isInteger), "every child reported");
    assert.deepEqual(readdirSync(root), ["counter"], "no lock or staging file is left behind");
  });

  it("FsStore lock: a live lock holds the swap back until it is released", async () => {
    const root = roots.fresh();
    const s = new FsStore(root);
    const v = (await s.putIfVersion("m", bytes(1), null))!;
    const lock = join(root, ".zs-tmp-lock-m");
    writeFileSync(lock, "other process\n");
    let done = false;
    const swap = s.putIfVersion("m", bytes(2), v).then((r) => {
      done = true;
      return r;
    });
    await sleep(300);
    assert.equal(done, false, "waited for the lock");
    assert.deepEqual(await s.get("m"), bytes(1));
    await rm(lock);
    assert.ok((await swap) !== undefined);
    assert.deepEqual(await s.get("m"), bytes(2));
  });

  it("FsStore lock: a lock left by a dead process (older than the stale timeout) is broken", async () => {
    const root = roots.fresh();
    const s = new FsStore(root);
    // create-only needs no lock (link refuses an existing name); a swap on a version takes it
    const v1 = (await s.putIfVersion("a/m", bytes(1), null))!;
    const lock = join(root, "a", ".zs-tmp-lock-m");
    writeFileSync(lock, "dead process\n");
    const old = new Date(Date.now() - 60_000);
    utimesSync(lock, old, old);
    assert.ok((await s.putIfVersion("a/m", bytes(3), v1)) !== undefined);
    assert.deepEqual(readdirSync(join(root, "a")), ["m"]);
    assert.deepEqual(await s.list(""), ["a/m"]);
    assert.deepEqual(await s.get("a/m"), bytes(3));
  });

  it("FsStore.putIfVersion: a key's stamp never comes back, whatever the clock and the inode allocator do", async () => {
    const root = roots.fresh();
    const s = new FsStore(root);
    const mtimeOf = (version: string) => BigInt(version.split("-").at(-1)!);
    let v = (await s.putIfVersion("m", bytes(1), null))!;
    // Writes within one clock tick share a modification time, and ext4 reuses a freed inode at once: a new
    // version must still come after the one it replaces. A version dated a minute ahead stands for that.
    const ahead = new Date(Date.now() + 60_000);
    utimesSync(join(root, "m"), ahead, ahead);
    v = (await s.getVersioned("m"))!.version;
    const next = (await s.putIfVersion("m", bytes(1), v))!;
    assert.ok(mtimeOf(next) > mtimeOf(v), `new version ${next} is not later than ${v}`);
    assert.equal((await s.getVersioned("m"))!.version, next);
    // Same-size rewrites in a tight loop (inodes reused): every stamp is new, a stale one never swaps.
    const seen = new Set([v, next]);
    let current = next;
    for (let i = 0; i < 300; i++) {
      current = (await s.putIfVersion("m", bytes(i % 7), current))!;
      assert.ok(!seen.has(current), `stamp ${current} came back at write ${i}`);
      seen.add(current);
    }
    assert.equal(await s.putIfVersion("m", bytes(9), v), undefined);
    assert.equal(await s.putIfVersion("m", bytes(9), next), undefined);
  });
});

/** This process's descriptors that name a file under `root` (a deleted one's name ends in " (deleted)"). */
function openUnder(root: string): string[] {
  const out: string[] = [];
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(root)) out.push(target);
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

describe("FsStore.putIfVersion replacing large objects", { skip: process.platform !== "linux" }, () => {
  it("swaps every version in and leaves no descriptor of a replaced one open", async () => {
    const root = roots.fresh();
    const s = new FsStore(root);
    const big = (i: number) => new Uint8Array(2 << 20).map((_, k) => (k * 31 + i) & 255);
    let v = (await s.putIfVersion("shard", big(0), null))!;
    for (let i = 1; i <= 6; i++) {
      v = (await s.putIfVersion("shard", big(i), v))!;
      assert.ok(v, `version ${i} swapped in`);
      assert.deepEqual(await s.get("shard"), big(i));
    }
    // The replaced files are closed off this thread: wait for the pool to get to them.
    for (let i = 0; i < 200 && openUnder(root).length > 0; i++) await sleep(10);
    assert.deepEqual(openUnder(root), []);
  });
});
