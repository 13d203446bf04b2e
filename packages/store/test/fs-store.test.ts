import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { StoreError, SymlinkRefused } from "@zarr-stream/spec";
import { tempRoots } from "@zarr-stream/test-support/temp-dirs";
import { FsStore } from "../src/fs-store.js";
import { openStore } from "../src/open-store.js";
import { nodeFsOnly } from "./node-fs-only.js";
import {
  BAD_KEYS,
  bytes,
  pinnedStoreSuite,
  storeSuite,
  streamingStoreSuite,
  versionedStoreSuite,
} from "./store-suite.js";

const roots = tempRoots("store-fs");

storeSuite("FsStore", () => new FsStore(roots.fresh()));
streamingStoreSuite("FsStore", () => new FsStore(roots.fresh()));
versionedStoreSuite("FsStore", () => new FsStore(roots.fresh()));
pinnedStoreSuite("FsStore", () => new FsStore(roots.fresh()), true);
pinnedStoreSuite("FsStore on node:fs alone", () => nodeFsOnly(() => new FsStore(roots.fresh())), true);
// Without @zarr-stream/fileio's addon (no addon built, or ZSTREAM_NATIVE_FS=0): node:fs alone.
storeSuite("FsStore on node:fs alone", () => nodeFsOnly(() => new FsStore(roots.fresh())));
streamingStoreSuite("FsStore on node:fs alone", () => nodeFsOnly(() => new FsStore(roots.fresh())));

describe("FsStore on disk", () => {
  it("FsStore: the root is created by the first write, not by construction, reads or list", async () => {
    const root = roots.fresh();
    const s = new FsStore(root);
    assert.equal(await s.get("a/b"), undefined);
    assert.deepEqual(await s.list(""), []);
    await s.delete("a/b");
    assert.equal(existsSync(root), false);
    await s.put("a/b", bytes(1));
    assert.deepEqual(readdirSync(join(root, "a")), ["b"]);
  });

  it("Store.url: file:// plus the absolute root, and openStore(url) reaches the same objects", async () => {
    const root = join(roots.fresh(), "with space");
    const s = new FsStore(root);
    assert.ok(s.url.startsWith("file:///"));
    assert.equal(fileURLToPath(s.url), root);
    await s.put("zarr.json", bytes(7));
    assert.deepEqual(await openStore(s.url).get("zarr.json"), bytes(7));
  });

  it("Store keys: bad keys fail before any I/O (the root is never created)", async () => {
    const root = roots.fresh();
    const s = new FsStore(root);
    for (const key of BAD_KEYS) {
      await assert.rejects(s.put(key, bytes(1)), StoreError);
      await assert.rejects(s.putIfAbsent(key, bytes(1)), StoreError);
    }
    assert.equal(existsSync(root), false);
  });

  it("§5.4 stage-and-rename: put and putIfAbsent leave no staging file behind", async () => {
    const root = roots.fresh();
    const s = new FsStore(root);
    await s.put("v/c/0", bytes(1));
    await s.put("v/c/0", bytes(2));
    assert.equal(await s.putIfAbsent("v/c/1", bytes(3)), true);
    assert.equal(await s.putIfAbsent("v/c/1", bytes(4)), false);
    await Promise.all(Array.from({ length: 5 }, (_, i) => s.putIfAbsent("v/c/2", bytes(i))));
    assert.deepEqual(readdirSync(join(root, "v", "c")).sort(), ["0", "1", "2"]);
  });

  it("FsStore: a leftover staging file (from a crash) is invisible to list", async () => {
    const root = roots.fresh();
    const s = new FsStore(root);
    await s.put("v/c/0", bytes(1));
    writeFileSync(join(root, "v", "c", ".zs-tmp-999-deadbeef"), "partial");
    writeFileSync(join(root, ".zs-tmp-1-00"), "partial");
    assert.deepEqual(await s.list(""), ["v/c/0"]);
    assert.deepEqual(await s.list("v/c/"), ["v/c/0"]);
    assert.deepEqual(await s.list("v/c/.zs"), []);
  });

  it("FsStore: a directory at a key reads as absent and deletes as a no-op", async () => {
    const s = new FsStore(roots.fresh());
    await s.put("group/array/c/0", bytes(1));
    assert.equal(await s.get("group/array"), undefined);
    assert.equal(await s.getRange("group/array", 0, 1), undefined);
    assert.equal(await s.size("group"), undefined);
    await s.delete("group");
    assert.deepEqual(await s.list(""), ["group/array/c/0"]);
  });

  it("FsStore: an OS failure other than absence is a StoreError with the key and the cause", async () => {
    const s = new FsStore(roots.fresh());
    await s.put("file", bytes(1));
    // "file" is a regular file, so it cannot also be a directory holding "file/x".
    await assert.rejects(s.put("file/x", bytes(2)), (err: unknown) => {
      assert.ok(err instanceof StoreError);
      assert.equal(err.key, "file/x");
      assert.ok(err.cause instanceof Error && "code" in err.cause, "cause is the OS error");
      return true;
    });
    assert.equal(await s.get("file/x"), undefined, "ENOTDIR on read is absence");
  });

  it("Store keys: list never walks a symlinked directory that points outside the root", async () => {
    const outside = roots.fresh();
    mkdirSync(outside, { recursive: true });
    writeFileSync(join(outside, "secret"), "x");
    const root = roots.fresh();
    const s = new FsStore(root);
    await s.put("inside", bytes(1));
    symlinkSync(outside, join(root, "escape"), "dir");
    assert.deepEqual(await s.list(""), ["inside"]);
    await assert.rejects(s.list("escape/"), SymlinkRefused);
  });

  it("Store.put atomic replace: a concurrent reader sees the old or the new object, never a part", async () => {
    const s = new FsStore(roots.fresh());
    const a = new Uint8Array(1 << 20).fill(0xaa);
    const b = new Uint8Array(1 << 20).fill(0xbb);
    await s.put("hot", a);
    let writing = true;
    const writer = (async () => {
      try {
        for (let i = 0; i < 24; i++) await s.put("hot", i % 2 === 0 ? b : a);
      } finally {
        writing = false;
      }
    })();
    let reads = 0;
    try {
      while (writing) {
        const got = await s.get("hot");
        assert.ok(got !== undefined, "never absent while being replaced");
        assert.equal(got.length, a.length);
        const first = got[0];
        assert.ok(first === 0xaa || first === 0xbb);
        assert.ok(
          got.every((x) => x === first),
          "a torn read mixes both payloads",
        );
        reads++;
      }
    } finally {
      // Even when a read fails, let the writer finish before the temp directory is removed.
      await writer;
    }
    assert.ok(reads > 0);
  });
});
