// FsStore on a full disk. Small tmpfs mounts that the test makes (mounting needs root; CI runs as root)
// run out of space (size=) or of inodes (nr_inodes=) at each step of each write path: the staging file's
// bytes (buffered, and O_DIRECT for objects of 256 KiB and more), the lock file, the hard link of a
// create-only write, a new directory. EDQUOT and EIO, which a tmpfs here cannot produce, are injected into
// node:fs (test-support/fs-faults). Every failure is a named error (StoreFull, with the key, the object's
// path and the errno; a StoreError naming EIO), leaves no `.zs-tmp-*` file and no part of an object, and
// the key holds what it held before; once space is back the same call goes through at once.
import assert from "node:assert/strict";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { directFileWriter, fileIoBackend } from "@zarr-stream/fileio";
import { StoreError, StoreFull } from "@zarr-stream/spec";
import { type FsFaults, injectFsFaults } from "@zarr-stream/test-support/fs-faults";
import { tempRoots } from "@zarr-stream/test-support/temp-dirs";
import { mountTmpfs, PAGE, type Tmpfs, tmpfsSkipReason } from "@zarr-stream/test-support/tmpfs";
import { DIRECT_WRITE_MIN } from "../src/direct-writes.js";
import { FsStore } from "../src/fs-store.js";

const roots = tempRoots("store-full");
const skip = tmpfsSkipReason();
if (skip !== undefined) console.log(`# FsStore disk-full suite skipped: ${skip}`);

const SMALL = 3000;
const LARGE = DIRECT_WRITE_MIN + 40_000;
const bytes = (n: number, fill: number) => new Uint8Array(n).fill(fill);

type Write = "put" | "putIfAbsent" | "putIfVersion(null)" | "putIfVersion(v)";
/** Whether the write needs the key present (a swap, or a put over an object) or absent first. */
const needsOld = (w: Write) => w === "put" || w === "putIfVersion(v)";

/** Runs `write` of `data` at `key`; putIfVersion(v) swaps on the version it reads first. */
async function write(store: FsStore, w: Write, key: string, data: Uint8Array): Promise<unknown> {
  switch (w) {
    case "put":
      return store.put(key, data);
    case "putIfAbsent":
      return store.putIfAbsent(key, data);
    case "putIfVersion(null)":
      return store.putIfVersion(key, data, null);
    case "putIfVersion(v)":
      return store.putIfVersion(key, data, (await store.version(key))!);
  }
}

/** What a write that failed must leave: no staging or lock file anywhere, and the key as it was. */
async function assertUnchanged(fs: Tmpfs, store: FsStore, key: string, old: Uint8Array | undefined) {
  assert.deepEqual(
    fs.walk().filter((p) => p.includes(".zs-tmp-")),
    [],
    "no staging or lock file is left",
  );
  assert.deepEqual(await store.get(key), old, old === undefined ? "the key stays absent" : "the old object");
}

/** The system call that failed first: the innermost cause's. */
function syscallOf(err: unknown): string | undefined {
  let e = err as { cause?: unknown; syscall?: string } | undefined;
  while (e?.cause !== undefined) e = e.cause as typeof e;
  return e?.syscall;
}

const isFull =
  (store: FsStore, key: string, code: "ENOSPC" | "EDQUOT", syscall?: string) => (err: unknown) => {
    assert.ok(err instanceof StoreFull, `StoreFull, got ${err}`);
    if (syscall !== undefined) assert.equal(syscallOf(err), syscall, `the ${syscall} found the disk full`);
    assert.ok(err instanceof StoreError);
    assert.deepEqual([err.key, err.path, err.code], [key, join(store.root, key), code]);
    assert.match(err.message, new RegExp(`${code}.*free space`));
    return true;
  };

describe("FsStore on a full tmpfs", { skip }, () => {
  let parent: string;
  const mounts: Tmpfs[] = [];
  const mount = (size: number, nrInodes?: number) => {
    const m = mountTmpfs(parent, size, nrInodes);
    mounts.push(m);
    return m;
  };
  before(() => {
    parent = roots.fresh();
    mkdirSync(parent);
  });
  after(() => {
    for (const m of mounts) m.umount();
  });

  it("O_DIRECT on this tmpfs: the staging of large objects goes the direct path when the file system takes it", async (t) => {
    const fs = mount(1 << 20);
    let how = `fileio backend ${fileIoBackend().backend}`;
    try {
      await directFileWriter()(join(fs.dir, "probe"), bytes(LARGE, 1));
      how += ", O_DIRECT accepted: objects of 256 KiB and more are staged by the direct path";
    } catch (err) {
      how += `, O_DIRECT refused (${(err as { code?: string }).code}): every object is staged buffered`;
    }
    t.diagnostic(how);
  });

  for (const w of ["put", "putIfAbsent", "putIfVersion(null)", "putIfVersion(v)"] as const) {
    for (const [size, path] of [
      [SMALL, "buffered"],
      [LARGE, "direct"],
    ] as const) {
      it(`${w} of ${size} bytes (${path} staging) on a full disk: StoreFull, nothing left, and the same call succeeds once space is freed`, async () => {
        const fs = mount(2 << 20);
        const store = new FsStore(join(fs.dir, "store"));
        const key = "a/b/k";
        const old = needsOld(w) ? bytes(100, 1) : undefined;
        if (old !== undefined) await store.put(key, old);
        else await store.put("a/b/other", bytes(10, 9));
        const filler = fs.fill(0);
        await assert.rejects(write(store, w, key, bytes(size, 2)), isFull(store, key, "ENOSPC", "write"));
        await assertUnchanged(fs, store, key, old);
        rmSync(filler);
        const started = Date.now();
        const done = await write(store, w, key, bytes(size, 2));
        assert.ok(done !== false && (w === "put" || done !== undefined), `${w} went through: ${done}`);
        assert.ok(Date.now() - started < 2000, `it waited ${Date.now() - started} ms`);
        assert.deepEqual(await store.get(key), bytes(size, 2));
      });
    }
  }

  it("putIfVersion whose staged copy takes the last page and whose lock file finds the disk full: StoreFull, no lock left, the next swap goes through at once", async () => {
    const fs = mount(64 << 10);
    const store = new FsStore(join(fs.dir, "store"));
    const v1 = await store.putIfVersion("k", bytes(100, 1), null);
    const filler = fs.fill(1);
    await assert.rejects(store.putIfVersion("k", bytes(100, 2), v1!), isFull(store, "k", "ENOSPC"));
    await assertUnchanged(fs, store, "k", bytes(100, 1));
    rmSync(filler);
    const started = Date.now();
    assert.ok((await store.putIfVersion("k", bytes(100, 3), v1!)) !== undefined);
    assert.ok(Date.now() - started < 2000, `the swap waited ${Date.now() - started} ms`);
  });

  for (const w of ["putIfAbsent", "putIfVersion(null)", "putIfVersion(v)"] as const) {
    const [step, syscall] =
      w === "putIfVersion(v)" ? ["its lock file", "open"] : ["the hard link into place", "link"];
    it(`${w} whose staging takes the last inode and ${step} finds none: StoreFull, nothing left`, async () => {
      const fs = mount(1 << 20, 64);
      const store = new FsStore(join(fs.dir, "store"));
      const old = needsOld(w) ? bytes(100, 1) : undefined;
      if (old !== undefined) await store.put("k", old);
      else await store.put("other", bytes(10, 9));
      const files = fs.fillInodes(1);
      await assert.rejects(write(store, w, "k", bytes(100, 2)), isFull(store, "k", "ENOSPC", syscall));
      await assertUnchanged(fs, store, "k", old);
      rmSync(files, { recursive: true });
      await write(store, w, "k", bytes(100, 2));
      assert.deepEqual(await store.get("k"), bytes(100, 2));
    });
  }

  it("a put whose key needs a new directory and no inode is left: StoreFull, no object", async () => {
    const fs = mount(1 << 20, 64);
    const store = new FsStore(join(fs.dir, "store"));
    await store.put("a/x", bytes(10, 1));
    const files = fs.fillInodes(0);
    await assert.rejects(
      store.put("a/new/dir/k", bytes(10, 2)),
      isFull(store, "a/new/dir/k", "ENOSPC", "mkdir"),
    );
    await assertUnchanged(fs, store, "a/new/dir/k", undefined);
    assert.deepEqual(await store.list(""), ["a/x"]);
    rmSync(files, { recursive: true });
    await store.put("a/new/dir/k", bytes(10, 2));
    assert.deepEqual(await store.list(""), ["a/new/dir/k", "a/x"]);
  });

  it("delete on a full disk goes through and frees the space the next write needs", async () => {
    const fs = mount(128 << 10);
    const store = new FsStore(join(fs.dir, "store"));
    await store.put("big", bytes(8 * PAGE, 1));
    fs.fill(0);
    await assert.rejects(store.put("k", bytes(4 * PAGE, 2)), StoreFull);
    await store.delete("big");
    await store.put("k", bytes(4 * PAGE, 2));
    assert.deepEqual(await store.list(""), ["k"]);
    assert.deepEqual(
      fs.walk().filter((p) => p.includes(".zs-tmp-")),
      [],
    );
  });
});

describe("FsStore with EDQUOT and EIO injected into node:fs", () => {
  let faults: FsFaults;
  let dir: string;
  let native: string | undefined;
  before(async () => {
    dir = roots.fresh();
    mkdirSync(dir);
    // FsStore's native I/O does not go through node:fs: this suite runs it on node:fs only.
    native = process.env.ZSTREAM_NATIVE_FS;
    process.env.ZSTREAM_NATIVE_FS = "0";
    faults = await injectFsFaults();
  });
  after(async () => {
    await faults.restore();
    if (native === undefined) delete process.env.ZSTREAM_NATIVE_FS;
    else process.env.ZSTREAM_NATIVE_FS = native;
  });
  let n = 0;
  const fresh = () => {
    const root = join(dir, `s${n++}`);
    mkdirSync(root);
    return new FsStore(root);
  };
  const leftovers = async (store: FsStore) =>
    (await faults.paused(async () => (await import("node:fs")).readdirSync(store.root, { recursive: true })))
      .map(String)
      .filter((p) => p.includes(".zs-tmp-"));
  const staged = (store: FsStore) => (p: string) => p.startsWith(`${store.root}/`) && p.includes(".zs-tmp-");

  for (const w of ["put", "putIfAbsent", "putIfVersion(null)", "putIfVersion(v)"] as const) {
    it(`${w} whose staging write is refused with EDQUOT: StoreFull (EDQUOT), nothing left`, async () => {
      const store = fresh();
      const old = needsOld(w) ? bytes(100, 1) : undefined;
      if (old !== undefined) await store.put("k", old);
      faults.script({ op: "write", code: "EDQUOT", path: staged(store) });
      await assert.rejects(write(store, w, "k", bytes(SMALL, 2)), isFull(store, "k", "EDQUOT"));
      assert.equal(faults.fired.at(-1)?.code, "EDQUOT");
      assert.deepEqual(await leftovers(store), []);
      assert.deepEqual(await store.get("k"), old);
    });
  }

  it("putIfVersion whose lock file's write is refused with EDQUOT: StoreFull, no lock left", async () => {
    const store = fresh();
    const v1 = await store.putIfVersion("k", bytes(10, 1), null);
    faults.script({ op: "write", code: "EDQUOT", path: (p) => p.endsWith("/.zs-tmp-lock-k") });
    await assert.rejects(store.putIfVersion("k", bytes(10, 2), v1!), isFull(store, "k", "EDQUOT"));
    assert.deepEqual(await leftovers(store), []);
    assert.deepEqual(await store.get("k"), bytes(10, 1));
  });

  for (const w of ["put", "putIfAbsent", "putIfVersion(v)"] as const) {
    for (const op of ["write", "sync"] as const) {
      it(`${w} whose staging ${op} fails with EIO: a StoreError naming EIO and the key, nothing left`, async () => {
        const store = fresh();
        const old = needsOld(w) ? bytes(100, 1) : undefined;
        if (old !== undefined) await store.put("k", old);
        faults.script({ op, code: "EIO", path: staged(store) });
        await assert.rejects(write(store, w, "k", bytes(SMALL, 2)), (err: unknown) => {
          assert.ok(err instanceof StoreError && !(err instanceof StoreFull), `a StoreError, got ${err}`);
          assert.equal(err.key, "k");
          assert.match(err.message, /EIO/);
          return true;
        });
        assert.deepEqual(await leftovers(store), []);
        assert.deepEqual(await store.get("k"), old);
      });
    }
  }

  for (const read of ["get", "getRange", "getSuffix", "getVersioned"] as const) {
    it(`${read} whose read fails with EIO: a StoreError naming EIO and the key; the object is intact`, async () => {
      const store = fresh();
      await store.put("dir/k", bytes(SMALL, 7));
      faults.script({ op: "read", code: "EIO", path: (p) => p === join(store.root, "dir/k") });
      const call = {
        get: () => store.get("dir/k"),
        getRange: () => store.getRange("dir/k", 10, 100),
        getSuffix: () => store.getSuffix("dir/k", 100),
        getVersioned: () => store.getVersioned("dir/k"),
      }[read];
      await assert.rejects(call(), (err: unknown) => {
        assert.ok(err instanceof StoreError, `a StoreError, got ${err}`);
        assert.equal(err.key, "dir/k");
        assert.match(err.message, /EIO/);
        return true;
      });
      assert.deepEqual(await store.get("dir/k"), bytes(SMALL, 7));
    });
  }
});
