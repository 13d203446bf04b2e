import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { tempRoots } from "@zarr-stream/test-support/temp-dirs";
import { DIRECT_WRITE_MIN, DirectWrites } from "../src/direct-writes.js";
import { FsStore } from "../src/fs-store.js";
import { nodeFsOnly } from "./node-fs-only.js";

const roots = tempRoots("store-direct");

function errno(code: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code} (test)`), { code, syscall: "write" });
}

/** A writer that records its calls and does what `act` says. */
function fakeWriter(act: (path: string, bytes: Uint8Array) => void) {
  const calls: number[] = [];
  const write = async (path: string, bytes: Uint8Array) => {
    calls.push(bytes.length);
    act(path, bytes);
  };
  return { calls, write };
}

function sized(n: number, seed = 1): Uint8Array {
  return Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 255);
}

describe("DirectWrites: which objects go around the page cache", () => {
  it("objects below DIRECT_WRITE_MIN take the buffered path; larger ones the direct writer", async () => {
    const dir = roots.fresh();
    mkdirSync(dir, { recursive: true });
    const w = fakeWriter((path, bytes) => writeFileSync(path, bytes));
    const direct = new DirectWrites(w.write);
    assert.equal(await direct.write(join(dir, "small"), sized(DIRECT_WRITE_MIN - 1)), false);
    assert.equal(existsSync(join(dir, "small")), false);
    assert.equal(await direct.write(join(dir, "large"), sized(DIRECT_WRITE_MIN)), true);
    assert.deepEqual(w.calls, [DIRECT_WRITE_MIN]);
  });

  it("a filesystem that refuses direct I/O (EINVAL) turns it off for good, and its partial file is removed", async () => {
    const dir = roots.fresh();
    mkdirSync(dir, { recursive: true });
    const w = fakeWriter((path, bytes) => {
      writeFileSync(path, bytes.subarray(0, 4096));
      throw errno("EINVAL");
    });
    const direct = new DirectWrites(w.write);
    assert.equal(await direct.write(join(dir, "a"), sized(DIRECT_WRITE_MIN)), false);
    assert.deepEqual(readdirSync(dir), []);
    assert.equal(await direct.write(join(dir, "b"), sized(DIRECT_WRITE_MIN)), false);
    assert.deepEqual(w.calls, [DIRECT_WRITE_MIN], "the refusing writer was called again");
  });

  it("other failures (ENOSPC) reject with the OS error and leave direct writes on", async () => {
    const dir = roots.fresh();
    const w = fakeWriter(() => {
      throw errno("ENOSPC");
    });
    const direct = new DirectWrites(w.write);
    await assert.rejects(direct.write(join(dir, "a"), sized(DIRECT_WRITE_MIN)), { code: "ENOSPC" });
    await assert.rejects(direct.write(join(dir, "b"), sized(DIRECT_WRITE_MIN)), { code: "ENOSPC" });
    assert.equal(w.calls.length, 2);
  });

  it("without a writer (no addon, or ZSTREAM_NATIVE_FS=0) every object is buffered", async () => {
    assert.equal(await new DirectWrites(undefined).write(join(roots.fresh(), "x"), sized(1 << 20)), false);
    const direct = nodeFsOnly(() => DirectWrites.fromEnvironment());
    assert.equal(await direct.write(join(roots.fresh(), "y"), sized(1 << 20)), false);
  });
});

describe("FsStore with direct writes (the native addon's writer)", () => {
  it("large objects read back exactly, replace atomically, and leave no staging file", async () => {
    const root = roots.fresh();
    const s = new FsStore(root);
    const sizes = [DIRECT_WRITE_MIN - 1, DIRECT_WRITE_MIN, DIRECT_WRITE_MIN + 1, (3 << 20) + 7];
    for (const [i, n] of sizes.entries()) await s.put(`v/c/${i}`, sized(n, i));
    for (const [i, n] of sizes.entries()) {
      assert.deepEqual(await s.get(`v/c/${i}`), sized(n, i));
      assert.deepEqual(await s.getRange(`v/c/${i}`, n - 5, 10), sized(n, i).subarray(n - 5));
    }
    await s.put("v/c/3", sized(1 << 20, 9));
    assert.deepEqual(await s.get("v/c/3"), sized(1 << 20, 9));
    assert.equal(await s.putIfAbsent("v/c/3", sized(1 << 20, 10)), false);
    assert.equal(await s.putIfAbsent("v/c/4", sized(1 << 20, 11)), true);
    assert.deepEqual(await s.get("v/c/4"), sized(1 << 20, 11));
    assert.deepEqual(readdirSync(join(root, "v", "c")).sort(), ["0", "1", "2", "3", "4"]);
  });

  it("reads in one native job agree with node:fs at every size boundary (first get guess, fresh-read limit)", async () => {
    const root = roots.fresh();
    const s = new FsStore(root);
    const sizes = [0, 1, (16 << 10) - 1, 16 << 10, (16 << 10) + 1, (1 << 20) + 3, (3 << 20) + 7];
    for (const [i, n] of sizes.entries()) await s.put(`k${i}`, sized(n, i));
    for (const [i, n] of sizes.entries()) {
      const want = sized(n, i);
      assert.deepEqual(await s.get(`k${i}`), want, `get ${n}`);
      for (const len of [10, 1 << 20, (1 << 20) + 1, 4 << 20]) {
        assert.deepEqual(await s.getRange(`k${i}`, 5, len), want.subarray(5, 5 + len), `range ${n} ${len}`);
        assert.deepEqual(await s.getSuffix(`k${i}`, len), want.subarray(Math.max(0, n - len)), `suffix ${n}`);
      }
      const into = new Uint8Array(n + 9).fill(7);
      assert.equal(await s.getSuffixInto(`k${i}`, n + 9, into), n);
      assert.deepEqual(into.subarray(0, n), want);
      if (n > 0) await assert.rejects(s.getSuffixInto(`k${i}`, n, new Uint8Array(n - 1)), /needs \d+ bytes/);
      into.fill(7);
      assert.equal(await s.getRangeInto(`k${i}`, 3, n + 9, into), Math.max(0, n - 3));
      assert.deepEqual(into.subarray(0, Math.max(0, n - 3)), want.subarray(3));
      if (n > 4)
        await assert.rejects(s.getRangeInto(`k${i}`, 3, n, new Uint8Array(n - 4)), /needs \d+ bytes/);
    }
    mkdirSync(join(root, "dir"));
    assert.equal(await s.get("dir"), undefined);
    assert.equal(await s.getRange("dir", 0, 4), undefined);
    assert.equal(await s.getSuffix("dir", 4), undefined);
    assert.equal(await s.getSuffixInto("dir", 4, new Uint8Array(4)), undefined);
    assert.equal(await s.getRangeInto("dir", 0, 4, new Uint8Array(4)), undefined);
    assert.equal(await s.get("k1/below-a-file"), undefined, "ENOTDIR reads as absent");
  });
});

it("FsStore: a shard-sized put bypasses the page cache, a small one does not (fincore)", async () => {
  // Inside the package, not os.tmpdir(): on a tmpfs every page is resident whatever the writer does.
  const root = mkdtempSync(join(fileURLToPath(new URL("../..", import.meta.url)), ".direct-write-"));
  after(() => rmSync(root, { recursive: true, force: true }));
  const s = new FsStore(root);
  await s.put("big", sized(4 << 20));
  await s.put("small", sized(DIRECT_WRITE_MIN - 1));
  const resident = execFileSync("fincore", ["--bytes", "--noheadings", "--output", "RES", "big", "small"], {
    cwd: root,
  })
    .toString()
    .trim()
    .split("\n")
    .map(Number);
  assert.deepEqual(resident, [0, DIRECT_WRITE_MIN], "bytes of big and small left in the page cache");
});
