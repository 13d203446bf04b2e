import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { StoreError } from "@zarr-stream/spec";
import { tempRoots } from "@zarr-stream/test-support/temp-dirs";
import { FsStore } from "../src/fs-store.js";
import { MemoryStore } from "../src/memory-store.js";
import { openStore, registerStoreScheme } from "../src/open-store.js";
import { S3Store } from "../src/s3-store.js";
import type { OpenedStore } from "../src/store.js";
import { bytes } from "./store-suite.js";

const roots = tempRoots("store-open");

describe("openStore", () => {
  it("openStore: a plain absolute or relative path and a file:// URL give an FsStore on that directory", async () => {
    const root = roots.fresh();
    const byPath = openStore(root);
    assert.ok(byPath instanceof FsStore);
    assert.equal(byPath.root, root);
    await byPath.put("zarr.json", bytes(1));
    const byRelative = openStore(relative(process.cwd(), root));
    assert.ok(byRelative instanceof FsStore && byRelative.root === root);
    assert.deepEqual(await openStore(pathToFileURL(root).href).get("zarr.json"), bytes(1));
    assert.deepEqual(
      await openStore(`FILE://${root}`).get("zarr.json"),
      bytes(1),
      "schemes are case-insensitive",
    );
  });

  it("openStore: memory://<name> is one shared MemoryStore per name", async () => {
    const a = openStore("memory://open-test-a");
    assert.ok(a instanceof MemoryStore);
    await a.put("k", bytes(5));
    assert.equal(openStore("memory://open-test-a"), a);
    assert.deepEqual(await openStore("memory://open-test-a").get("k"), bytes(5));
    assert.equal(await openStore("memory://open-test-b").get("k"), undefined);
    assert.equal(a.url, "memory://open-test-a");
  });

  it("openStore: s3://bucket/prefix gives an S3Store on that bucket and prefix, without any request", () => {
    const s = openStore("s3://zs-bucket/runs/42");
    assert.ok(s instanceof S3Store);
    assert.equal(s.bucket, "zs-bucket");
    assert.equal(s.url, "s3://zs-bucket/runs/42");
    assert.throws(() => openStore("s3://Bad_Bucket/x"), StoreError);
  });

  it("openStore: an unknown scheme, an empty URL, a nameless memory store and a remote file URL are StoreErrors", () => {
    for (const url of ["gopher://x/y", "", "memory://", "file://remote-host/data"]) {
      assert.throws(() => openStore(url), StoreError, JSON.stringify(url));
    }
  });

  it("registerStoreScheme: a registered factory receives the URL and its store is returned", () => {
    const made: string[] = [];
    const store = new MemoryStore("custom");
    registerStoreScheme("zs-test", (url) => {
      made.push(url);
      return store;
    });
    assert.equal(openStore("zs-test://anything/here"), store);
    assert.deepEqual(made, ["zs-test://anything/here"]);
    assert.throws(() => registerStoreScheme("bad scheme", () => store), StoreError);
    assert.throws(() => registerStoreScheme("1abc", () => store), StoreError);
  });

  it("openStore: every store it gives can be closed and fenced, and is usable again after close()", async () => {
    const stores: OpenedStore[] = [
      openStore(roots.fresh()),
      openStore("memory://open-close"),
      openStore("s3://zs-bucket/close-test"),
    ];
    for (const s of stores) {
      assert.equal(typeof s.close, "function", s.url);
      assert.equal(typeof s.putIfVersion, "function", s.url);
      await s.close();
    }
    const [disk, mem] = stores as [OpenedStore, OpenedStore];
    await disk.put("k", bytes(1));
    await disk.close();
    assert.deepEqual(await disk.get("k"), bytes(1));
    await mem.put("k", bytes(2));
    await mem.close();
    assert.deepEqual(
      await openStore("memory://open-close").get("k"),
      bytes(2),
      "a closed memory store keeps its objects",
    );
  });

  it("openStore: a path containing '://' later on is still a path", () => {
    const root = join(roots.fresh(), "x:", "y");
    const s = openStore(root);
    assert.ok(s instanceof FsStore && s.root === root);
  });
});
