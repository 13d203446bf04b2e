// FsStore on a full disk: a small tmpfs the test mounts (root is needed; CI runs as root, so there the
// test never skips). A put that fails with ENOSPC leaves no lock or staging file behind, and once space
// is back the next put of the key goes through at once (no wait for a stale lock).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { closeSync, mkdirSync, openSync, readdirSync, rmSync, truncateSync, writeSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { StoreError } from "@zarr-stream/spec";
import { tempRoots } from "@zarr-stream/test-support/temp-dirs";
import { FsStore } from "../src/fs-store.js";

const roots = tempRoots("store-full");
const PAGE = 4096;

function skipReason(): string | undefined {
  if (process.platform !== "linux") return "tmpfs mounts are Linux's";
  if (process.getuid?.() !== 0 && process.env.CI !== "true") return "mounting a tmpfs needs root";
  return undefined;
}

/** Fills the file system at `dir` with `filler`, then frees `pages` pages of it. */
function fillLeaving(dir: string, pages: number): string {
  const filler = join(dir, "filler");
  const fd = openSync(filler, "w");
  const chunk = new Uint8Array(PAGE);
  let size = 0;
  try {
    for (;;) {
      writeSync(fd, chunk);
      size += PAGE;
    }
  } catch (err) {
    assert.equal((err as { code?: string }).code, "ENOSPC");
  } finally {
    closeSync(fd);
  }
  truncateSync(filler, Math.max(0, size - pages * PAGE));
  return filler;
}

describe("FsStore on a full disk (a 64 KiB tmpfs)", { skip: skipReason() }, () => {
  let mount: string;
  before(() => {
    mount = join(roots.fresh(), "tmpfs");
    mkdirSync(mount, { recursive: true });
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", mount]);
  });
  after(() => {
    execFileSync("umount", [mount]);
    rmSync(mount, { recursive: true, force: true });
  });

  it("a swap that fails with ENOSPC (staged, then its lock cannot be written) leaves no lock or temporary file, and the next swap goes through at once", async () => {
    const root = join(mount, "store");
    const store = new FsStore(root);
    const v1 = await store.putIfVersion("k", new Uint8Array(100).fill(1), null);
    assert.ok(v1 !== undefined);
    // One free page: the staged copy takes it, and the lock file's first byte finds the disk full.
    const filler = fillLeaving(mount, 1);
    const refused = await store.putIfVersion("k", new Uint8Array(100).fill(2), v1).catch((e) => e);
    assert.ok(refused instanceof StoreError, `a StoreError, got ${refused}`);
    assert.match(String(refused.message), /ENOSPC/);
    assert.deepEqual(readdirSync(root), ["k"], "no .zs-tmp-* file is left");
    assert.deepEqual(await store.get("k"), new Uint8Array(100).fill(1), "the object is the old one, whole");
    rmSync(filler);
    const started = Date.now();
    const v2 = await store.putIfVersion("k", new Uint8Array(100).fill(3), v1);
    assert.ok(v2 !== undefined);
    assert.ok(Date.now() - started < 2000, `the swap waited ${Date.now() - started} ms`);
    assert.deepEqual(await store.get("k"), new Uint8Array(100).fill(3));
  });
});
